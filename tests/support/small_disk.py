"""A small, real file system for the store to fill: a tmpfs mounted (as
root) on one directory, with a ballast file to take its room and give it
back, and read-only on demand. Unmounted when the test ends."""
from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest


class SmallDisk:
    def __init__(self, path: Path, size_kib: int):
        self.path = path
        self.size_kib = size_kib
        self.ballast = path / '.ballast'

    def _mount(self, *options: str) -> None:
        subprocess.run(['mount', '-t', 'tmpfs', '-o',
                        ','.join([f'size={self.size_kib}k', *options]),
                        'tmpfs', str(self.path)], check=True,
                       capture_output=True)

    def free_bytes(self) -> int:
        found = os.statvfs(self.path)
        return found.f_bavail * found.f_frsize

    def fill(self, leave: int = 0) -> None:
        """Takes all the room but `leave` bytes (rounded to pages)."""
        with open(self.ballast, 'ab') as fp:
            room = self.free_bytes() - leave
            if room > 0:
                fp.write(b'\0' * room)
        while self.free_bytes() > leave + 4096:
            with open(self.ballast, 'ab') as fp:
                fp.write(b'\0' * 4096)

    def free(self) -> None:
        self.ballast.unlink(missing_ok=True)

    def read_only(self, yes: bool = True) -> None:
        subprocess.run(['mount', '-o', f'remount,{"ro" if yes else "rw"}',
                        str(self.path)], check=True, capture_output=True)


@contextlib.contextmanager
def small_disk(path: Path, size_kib: int = 400):
    if os.geteuid() != 0:
        pytest.skip('mounting a tmpfs needs root')
    path.mkdir(parents=True, exist_ok=True)
    disk = SmallDisk(path, size_kib)
    try:
        disk._mount()
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f'cannot mount a tmpfs here: {err}')
    try:
        yield disk
    finally:
        subprocess.run(['umount', '-l', str(path)], capture_output=True)
