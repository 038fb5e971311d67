"""The local results store under CLUSTERPROOF_HOME.

Each ReFrame session appends its rows, as they arrive, to a file of its own:
``$CLUSTERPROOF_HOME/results/YYYY-MM-DD/<session>.jsonl``. One writer per
file and plain appends keep it safe on NFS home directories and with several
sessions at once; readers take every file and skip a torn last line.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get('CLUSTERPROOF_HOME')
                or Path.home() / '.clusterproof')


def results_dir() -> Path:
    return home() / 'results'


def new_session_id() -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
    return f'{stamp}-{uuid.uuid4().hex[:8]}'


class SessionFile:
    """Appends rows to this session's file, durable before anything else."""

    def __init__(self, session_id: str, directory: Path | None = None):
        self.session_id = session_id
        day = session_id[:8]
        day = f'{day[:4]}-{day[4:6]}-{day[6:8]}'
        self.path = (directory or results_dir()) / day / \
            f'{session_id}.jsonl'

    def append(self, row: dict) -> None:
        self.append_rows([row])

    def append_rows(self, rows: list[dict]) -> None:
        """Appends rows with one write and one fsync."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = ''.join(json.dumps(row, separators=(',', ':'),
                                   allow_nan=False) + '\n' for row in rows)
        with open(self.path, 'a') as fp:
            fp.write(lines)
            fp.flush()
            os.fsync(fp.fileno())


def iter_rows(directory: Path | None = None):
    """Every stored row, oldest file first; a torn line is skipped."""
    base = directory or results_dir()
    for path in sorted(base.glob('*/*.jsonl')):
        with open(path) as fp:
            for line in fp:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def session_files(directory: Path | None = None) -> list[Path]:
    """Every session's store file, oldest day first."""
    return sorted((directory or results_dir()).glob('*/*.jsonl'))


def read_session_file(path: Path) -> list[dict]:
    """The rows of one session file; a torn line is skipped."""
    rows = []
    with open(path) as fp:
        for line in fp:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows
