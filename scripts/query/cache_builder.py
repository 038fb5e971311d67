"""The Parquet cache written after a command, in the background.

A command (``clusterproof query``, ``report``, ``baseline``: every
connection a Runner opens) that finds more than its inline limit
(INLINE_VARIABLE, DEFAULT_INLINE) of settled JSON lines without an entry in
the store (the first query of a store, or after the cache was removed; a
query of a window counts the files outside it too, as the builder writes
those as well) reads those it needs into its table with only its own
columns, as plain DuckDB would, answers, and leaves the entries to a
builder: a process of its own (``nice`` 19, in a session of its own, its
errors in the cache's builder.log) that waits until the command has exited
and then loads the whole store as a query does, writing every missing entry
and pack. Writing every column of a year of results costs about twice what
a query alone does, so the first answer comes no later than it would
without a cache, and the commands after the builder find every entry. The
report reads 39 of the 50 columns, so it would gain less from a cache
written first; its six queries read the table, which DuckDB keeps
compressed (json_lines.create).

One builder at a time: it holds an flock on the cache's LOCK file from the
moment the command claims it until it has written the last entry. A
command that finds the lock held answers from the JSON lines too and starts
no builder. Entries and packs appear by rename, so a query running beside
the builder reads whole ones or none.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

INLINE_VARIABLE = 'CLUSTERPROOF_QUERY_CACHE_INLINE'
DEFAULT_INLINE = '256MB'
LOCK = '.builder.lock'
LOG = 'builder.log'
NICENESS = 19
_REPO = Path(__file__).resolve().parents[2]
_held = []          # the write end of each builder's pipe, open until exit


def inline_limit() -> int:
    """The JSON lines (bytes) a one-query command writes entries of itself
    (CLUSTERPROOF_QUERY_CACHE_INLINE, e.g. 1GB; default 256MB)."""
    from scripts.query import local
    text = os.environ.get(INLINE_VARIABLE) or DEFAULT_INLINE
    return local.memory_bytes(text, INLINE_VARIABLE)


def claim(where: Path) -> int | None:
    """The locked LOCK file of the cache in *where* (a file descriptor), or
    None when a builder holds it; OSError when it cannot be made."""
    where.mkdir(parents=True, exist_ok=True)
    fd = os.open(where / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def start(results_dir: Path, where: Path, lock: int) -> None:
    """Starts the builder of *results_dir*'s cache (in *where*), handing it
    the *lock* claim() took; it begins once this process has exited (the
    end of a pipe only this process holds)."""
    wait, done = os.pipe()
    try:
        with open(where / LOG, 'wb') as log:
            subprocess.Popen(
                [sys.executable, '-m', 'scripts.query.cache_builder',
                 str(Path(results_dir).resolve()), str(lock), str(wait)],
                cwd=str(_REPO), pass_fds=(lock, wait),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log, start_new_session=True)
    except OSError:
        os.close(done)               # no builder: the next query tries again
    else:
        _held.append(done)
    finally:
        os.close(wait)
        os.close(lock)               # the builder's copy holds it now


def wait_for(where: Path, timeout: float | None = None) -> bool:
    """Waits until no builder holds *where*'s lock (benchmarks, tests);
    False when *timeout* seconds passed first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            fd = claim(where)
        except OSError:
            return True              # no lock can be made: no builder
        if fd is not None:
            os.close(fd)
            return True
        if deadline is not None and time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def main(argv: list[str]) -> int:
    results_dir, lock, wait = Path(argv[0]), int(argv[1]), int(argv[2])
    os.nice(NICENESS)
    while os.read(wait, 4096):       # until the command has exited
        pass
    os.close(wait)
    from scripts.query import local, needs
    # every file, one column: the load writes each missing entry and pack
    local.connect(results_dir, needs.Reading(frozenset({'record_id'})))
    os.close(lock)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
