"""The one file lock: exclusive, non-blocking, POSIX (fcntl) record locks,
the ones NFS (lockd / NFSv4) honours across hosts. The live push holds its
session's lock while ReFrame runs, and one ``clusterproof sync`` at a time
holds ``$CLUSTERPROOF_HOME/sync.lock`` (azure/ledger.py, azure/sync.py)."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path


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
        """True when held; False when another process holds it; OSError
        when the lock file cannot be made."""
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
    try:
        if probe.acquire():
            probe.release()
            return False
    except OSError:
        return False      # a lock file nobody could open is held by nobody
    return True
