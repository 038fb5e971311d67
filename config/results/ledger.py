"""Which stored rows Log Analytics has accepted, and who may ship a session.

Beside each session's store file ``<session>.jsonl`` lie:

- ``<session>.shipped`` — the ledger: one line per row the Logs Ingestion API
  accepted (HTTP 204), ``<record_id> <unix time of the 204>``, appended and
  fsync'd after each accepted call. Nothing else marks a row shipped.
- ``<session>.lock`` — held (POSIX lock) by the session's live push while
  ReFrame runs, so that ``clusterproof sync`` leaves that session to it.

``$CLUSTERPROOF_HOME/sync.lock`` keeps to one sync at a time. POSIX record
locks (fcntl) are the ones NFS (lockd / NFSv4) honours across hosts.
"""
from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

LEDGER_SUFFIX = '.shipped'
LOCK_SUFFIX = '.lock'


def ledger_path(store_file: Path) -> Path:
    return store_file.with_suffix(LEDGER_SUFFIX)


def session_lock_path(store_file: Path) -> Path:
    return store_file.with_suffix(LOCK_SUFFIX)


class Ledger:
    """Appends accepted record_ids to one session's ledger file."""

    def __init__(self, path: Path):
        self.path = path

    def record(self, record_ids, when: float | None = None) -> None:
        ids = [rid for rid in record_ids if rid]
        if not ids:
            return
        stamp = int(when if when is not None else time.time())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, 'a') as fp:
            fp.write(''.join(f'{rid} {stamp}\n' for rid in ids))
            fp.flush()
            os.fsync(fp.fileno())


def read_ledger(path: Path) -> dict[str, int]:
    """record_id -> time of its latest 204. A torn last line (no newline:
    the write did not finish) does not count: at least once, never lost."""
    accepted = {}
    try:
        with open(path) as fp:
            for line in fp:
                parts = line.split()
                if line.endswith('\n') and len(parts) == 2 and \
                        parts[1].isdigit():
                    accepted[parts[0]] = int(parts[1])
    except FileNotFoundError:
        pass
    return accepted


class FileLock:
    """An exclusive, non-blocking POSIX lock on a file, held until release.

    POSIX locks belong to the process: a second lock of the same file in
    the same process succeeds, and closing any descriptor of it releases it,
    so each lock file is opened once here and kept open.
    """

    def __init__(self, path: Path):
        self.path = path
        self._fd = None

    def acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self, remove: bool = False) -> None:
        """Unlocks; remove=True also deletes the file first (only for a
        lock nobody takes again, like a finished session's)."""
        if self._fd is not None:
            try:
                if remove:
                    self.path.unlink(missing_ok=True)
                fcntl.lockf(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None


def is_locked(path: Path) -> bool:
    """True when another process holds the lock on path."""
    if not path.exists():
        return False
    probe = FileLock(path)
    if probe.acquire():
        probe.release()
        return False
    return True
