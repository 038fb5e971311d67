"""Which stored rows Log Analytics has accepted, and who may ship a session.

Beside each session's store file ``<session>.jsonl`` lie:

- ``<session>.shipped`` — the ledger: one line per row the Logs Ingestion API
  accepted (HTTP 204), ``<record_id> <unix time of the 204>``, appended and
  fsync'd after each accepted call. Nothing else marks a row shipped.
- ``<session>.lock`` — held (POSIX lock) by the session's live push while
  ReFrame runs, so that ``clusterproof sync`` leaves that session to it.

``$CLUSTERPROOF_HOME/sync.lock`` keeps to one sync at a time. Both are the
locks of config/results/locks.py.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..store import files as store

LEDGER_SUFFIX = '.shipped'
LOCK_SUFFIX = '.lock'
REJECTED_SUFFIX = '.rejected'


def ledger_path(store_file: Path) -> Path:
    return store_file.with_suffix(LEDGER_SUFFIX)


def session_lock_path(store_file: Path) -> Path:
    return store_file.with_suffix(LOCK_SUFFIX)


def rejected_path(store_file: Path) -> Path:
    return store_file.with_suffix(REJECTED_SUFFIX)


def set_aside(path: Path, row: dict, size: int, reason: str) -> None:
    """Notes, in ``<session>.rejected``, a row Log Analytics will never
    take (alone over 1 MB): one JSON object per line, record_id, size and
    reason. Every later sync leaves it out and says so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    store.append_whole(path, (json.dumps(
        {'record_id': str(row.get('record_id')), 'size': size,
         'reason': reason, 'time': int(time.time())},
        separators=(',', ':')) + '\n').encode())


def read_rejected(path: Path, warn=store.warn) -> dict[str, dict]:
    """record_id -> its entry in a ``<session>.rejected`` file."""
    if not os.path.lexists(path) or not store.regular_files([path], warn):
        return {}
    entries = {}
    for raw in path.read_bytes().splitlines():
        try:
            entry = json.loads(raw)
            entries[str(entry['record_id'])] = entry
        except (ValueError, TypeError, KeyError):
            continue
    return entries


class Ledger:
    """Appends accepted record_ids to one session's ledger file, each call
    whole or not at all (store.append_whole); OSError when it cannot."""

    def __init__(self, path: Path):
        self.path = path

    def record(self, record_ids, when: float | None = None) -> None:
        ids = [str(rid) for rid in record_ids if rid]
        if not ids:
            return
        stamp = int(when if when is not None else time.time())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        store.append_whole(self.path, ''.join(
            f'{rid} {stamp}\n' for rid in ids).encode())

    def problem(self) -> str | None:
        """Why the ledger cannot be written now (None: it can be opened
        for appending). Nothing is sent while this is not None."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                         0o644)
            os.close(fd)
        except OSError as err:
            return f'cannot write the ledger {self.path}: ' \
                f'{err.strerror or err}'
        return None


def read_ledger(path: Path, warn=store.warn) -> dict[str, int]:
    """record_id -> time of its latest 204. A torn last line (no newline:
    the write did not finish) does not count: at least once, never lost.
    A line that is not ``<id> <time>`` is skipped with a warning; a ledger
    that is not a regular file is never opened."""
    accepted = {}
    if not os.path.lexists(path) or not store.regular_files([path], warn):
        return accepted
    bad = 0
    try:
        with open(path, 'rb') as fp:
            for number, raw in enumerate(fp, 1):
                parts = raw.split()
                if raw.endswith(b'\n') and len(parts) == 2 and \
                        parts[1].isdigit():
                    try:
                        accepted[parts[0].decode('utf-8')] = int(parts[1])
                        continue
                    except UnicodeDecodeError:
                        pass
                if raw.endswith(b'\n') and raw.strip():
                    bad += 1
                    if bad <= store.MAX_WARNINGS_PER_FILE:
                        warn(f'{path} line {number}: not '
                             f"'<record_id> <time>'; skipped")
    except OSError as err:
        warn(f'skipped {path}: {err.strerror or err}')
    return accepted


