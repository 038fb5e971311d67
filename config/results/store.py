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
import tempfile
import uuid
from pathlib import Path


HOME_VARIABLE = 'CLUSTERPROOF_HOME'


class HomeError(OSError):
    """CLUSTERPROOF_HOME cannot hold the store: the message names the
    variable, the path and what is wrong, in one line."""


def home() -> Path:
    return Path(os.environ.get(HOME_VARIABLE)
                or Path.home() / '.clusterproof')


def _home_error(base: Path, what: str) -> HomeError:
    where = (f'{HOME_VARIABLE}={base}' if os.environ.get(HOME_VARIABLE)
             else f'{base} (the default, as {HOME_VARIABLE} is not set)')
    return HomeError(f'cannot use {where}: {what}; point {HOME_VARIABLE} '
                     'at a writable directory')


def check_home() -> Path:
    """HomeError unless the home is, or can be created as, a writable
    directory; creates nothing (for commands that write there only later)."""
    base = home()
    path = base
    while not path.exists() and path != path.parent:
        path = path.parent
    if not path.is_dir():
        what = 'not a directory'
        raise _home_error(base, what if path == base else f'{what}: {path}')
    if not os.access(path, os.W_OK | os.X_OK):
        raise _home_error(base, f'no permission to write in {path}')
    return base


def ensure_home(*subdirs: str) -> Path:
    """The home directory, created with ``subdirs`` and proven writable, or
    HomeError. ReFrame reports an OSError raised by its config in one line."""
    base = home()
    try:
        for sub in ('', *subdirs):
            (base / sub).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=base):
            pass
    except OSError as err:
        # mkdir(exist_ok=True) on a file says "File exists": say what it means.
        what = 'not a directory' if isinstance(err, FileExistsError) \
            else err.strerror or str(err)
        if err.filename and str(err.filename) != str(base):
            what += f': {err.filename}'
        raise _home_error(base, what) from None
    return base


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


    def write_all(self, rows: list[dict]) -> None:
        """All rows or none: written beside the file, then renamed onto it
        (readers only take ``*.jsonl``). For a new session file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + '.partial')
        with open(partial, 'w') as fp:
            for row in rows:
                fp.write(json.dumps(row, separators=(',', ':'),
                                    allow_nan=False) + '\n')
            fp.flush()
            os.fsync(fp.fileno())
        os.replace(partial, self.path)


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
