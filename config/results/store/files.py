"""The local results store under CLUSTERPROOF_HOME.

Each ReFrame session appends its rows, as they arrive, to a file of its own:
``$CLUSTERPROOF_HOME/results/YYYY-MM-DD/<session>.jsonl``. One writer per
file and plain appends keep it safe on NFS home directories and with several
sessions at once.

Lines are written whole or not at all: one ``write`` of the whole text on an
``O_APPEND`` descriptor, cut back to where it began when the disk takes only
part of it, and a torn tail left by a crash is cut back to its last newline
(with a note) before the next append.

Every reader goes through ``session_files`` and ``file_rows`` (sync, which
sends lines as they are: ``file_blocks`` and ``LineReader``): an entry that
is not a regular file (directory, dangling link, FIFO) is never opened, and a
line that cannot be read (not UTF-8, not JSON, not an object)
is skipped with one warning naming file and line; a NaN, an infinity or a
value of the wrong type reads as null, with the warning. Nothing one bad line
holds stops the rest.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import math
import os
import re
import stat
import sys
import tempfile
import threading
import uuid
from pathlib import Path

from .. import settings


HOME_VARIABLE = settings.HOME
# In the end line of a session whose store could not write every row.
UNSTORED_MARK = 'could not be stored in'


class HomeError(OSError):
    """CLUSTERPROOF_HOME cannot hold the store: the message names the
    variable, the path and what is wrong, in one line."""


def home() -> Path:
    return settings.home()


def _home_error(base: Path, what: str) -> HomeError:
    where = (f'{HOME_VARIABLE}={base}' if settings.home_is_set()
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


def existing_home() -> Path:
    """The home, for commands that only read it (query, report, sync):
    HomeError when it does not exist (a typo answers no rows) or is not a
    directory."""
    base = home()
    if not base.exists():
        raise _home_error(base, 'it does not exist (nothing was ever '
                                'stored there)')
    if not base.is_dir():
        raise _home_error(base, 'not a directory')
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
        """Appends rows with one write and one fsync, whole or not at all
        (OSError then, and the file is as it was)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_whole(self.path, encode_rows(rows))

    def write_all(self, rows: list[dict]) -> None:
        """All rows or none: written beside the file, then renamed onto it
        (readers only take ``*.jsonl``). For a new session file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + '.partial')
        try:
            with open(partial, 'wb') as fp:
                fp.write(encode_rows(rows))
                fp.flush()
                os.fsync(fp.fileno())
            os.replace(partial, self.path)
        except OSError:
            partial.unlink(missing_ok=True)
            raise


def encode_rows(rows: list[dict]) -> bytes:
    return ''.join(json.dumps(row, separators=(',', ':'), allow_nan=False)
                   + '\n' for row in rows).encode()


def warn(message: str) -> None:
    """The readers' default: one line on stderr."""
    print(f'clusterproof: warning: {message}', file=sys.stderr, flush=True)


# The appends and their notes: a torn tail cut, a write the disk refused.
TAIL_SCAN = 1 << 16


def _cut_torn_tail(fd: int, path: Path, note) -> int:
    """The file's size once a last line without its newline (a write that
    never finished) is cut back to the last newline."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b'\n':
        return size
    end = size
    while end > 0:
        start = max(0, end - TAIL_SCAN)
        newline = os.pread(fd, end - start, start).rfind(b'\n')
        if newline >= 0:
            end = start + newline + 1
            break
        end = start
    os.ftruncate(fd, end)
    note(f'{path}: cut a torn last line ({size - end} bytes without a '
         f'newline) before appending')
    return end


# One append at a time in this process: the store handler and the live
# push's thread may both append to a ledger, and cutting back a failed
# write must never cut the other's.
_APPENDING = threading.Lock()


def append_whole(path: Path, data: bytes, note=warn) -> None:
    """Appends data with one write on an O_APPEND descriptor and fsyncs:
    all of it or, on any error (a full disk), none of it (OSError). Each
    file has one writing process (its session, or the one sync)."""
    with _APPENDING:
        _append_whole(path, data, note)


def _append_whole(path: Path, data: bytes, note) -> None:
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f'{path} is not a regular file')
        size = _cut_torn_tail(fd, path, note)
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(28, os.strerror(28), str(path))  # ENOSPC
            os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass     # the next append cuts the torn tail
            raise
    finally:
        os.close(fd)


# The readers.
MAX_WARNINGS_PER_FILE = 5


def session_files(directory: Path | None = None, warn=warn) -> list[Path]:
    """Every session's store file, oldest day first. An entry that is not
    a regular file (a directory, a dangling link, a FIFO) is left out with
    a warning and never opened."""
    base = directory or results_dir()
    return regular_files(sorted(base.glob('*/*.jsonl')), warn)


def regular_files(paths, warn=warn) -> list[Path]:
    found = []
    for path in paths:
        try:
            mode = path.stat().st_mode
        except OSError as err:
            warn(f'skipped {path}: {err.strerror or err}')
            continue
        if not stat.S_ISREG(mode):
            warn(f'skipped {path}: not a regular file')
            continue
        found.append(path)
    return found


class Unreadable(ValueError):
    """A line that is no row."""


def _nonfinite(text):
    raise Unreadable(f'{text} is not a JSON number')


def parse_line(raw: bytes) -> tuple[dict, list[str]]:
    """A stored line -> (the row, what was read as null); Unreadable when
    the line is no row. Decoded by the json module's C scanner and looked
    over once; only a row holding a NaN or an infinity somewhere is decoded
    again, naming each such token."""
    if not raw.endswith(b'\n'):
        raise Unreadable('torn line (no newline at its end)')
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError:
        raise Unreadable('not UTF-8 text') from None
    row = _decoded(text)
    finite, wrong = _looked_over(row)
    if not finite:
        row, nulled = _nonfinite_as_null(text)
        return row, nulled + _retype(row, _looked_over(row)[1])
    return row, _retype(row, wrong)


def _decoded(text: str, **hooks) -> dict:
    try:
        row = json.loads(text, **hooks)
    except (ValueError, RecursionError):
        raise Unreadable('not JSON') from None
    if not isinstance(row, dict):
        raise Unreadable(f'a JSON {type(row).__name__}, not an object')
    return row


def _all_finite(values) -> bool:
    """No NaN or infinity in *values* (lists and objects looked into)."""
    for value in values:
        kind = type(value)
        if kind is float:
            if value - value != 0.0:       # NaN for NaN and infinities
                return False
        elif (kind is list or kind is dict) and not _all_finite(
                value.values() if kind is dict else value):
            return False
    return True


def _looked_over(row: dict) -> tuple[bool, list[str]]:
    """(whether *row* holds no NaN or infinity, the typed columns whose
    value has the wrong type), in one pass over its values."""
    typed = _typed_columns()
    finite, wrong = True, []
    for name, value in row.items():
        kind = type(value)
        if kind is float:
            finite = finite and value - value == 0.0
        elif kind is list or kind is dict:
            finite = finite and _all_finite(
                value.values() if kind is dict else value)
        elif value is None:
            continue
        wanted = typed.get(name)
        if wanted is not None and kind not in wanted[0]:
            wrong.append(name)
    return finite, wrong


def _nonfinite_as_null(text: str) -> tuple[dict, list[str]]:
    """The row of *text* with every NaN and infinity read as null, and
    what was."""
    nulled = []

    def number(token):
        value = float(token)
        if math.isfinite(value):
            return value
        nulled.append(token)
        return None

    def constant(token):
        nulled.append(token)
        return None
    row = _decoded(text, parse_float=number, parse_constant=constant)
    return row, [f'{token} read as null' for token in nulled]


def retyped(raw: bytes, row: dict) -> bool:
    """Whether the reader made a number record_id a string."""
    return b'"record_id":"' not in raw and b'"record_id": "' not in raw \
        and isinstance(row.get('record_id'), str)


# The JSON value types each column kind takes (exact types: json.loads
# makes no subclasses, and a bool is no number here).
_TYPES = {'real': (int, float), 'int': (int,), 'long': (int,),
          'string': (str,), 'datetime': (str,)}


@functools.cache
def _typed_columns() -> dict[str, tuple[tuple, str]]:
    from ..rows import schema as row_schema
    return {name: (_TYPES[kind], kind)
            for name, kind in row_schema.column_types().items()
            if kind in _TYPES}


def _retype(row: dict, wrong: list[str]) -> list[str]:
    """The *wrong* columns (of the wrong type) become null; record_id is
    compared as a string everywhere, so a number becomes its text."""
    record_id = row.get('record_id')
    if type(record_id) in (int, float):
        row['record_id'] = str(record_id)
    problems = []
    if wrong:
        for name, (wanted, kind) in _typed_columns().items():  # schema order
            if name in wrong and type(row[name]) not in wanted:
                problems.append(f'{name} ({type(row[name]).__name__}, not '
                                f'{kind}) read as null')
                row[name] = None
    return problems


def file_rows(path: Path, warn=warn):
    """The rows of one store file, as (line number, row)."""
    for number, (row, _, _) in enumerate(file_lines(path, warn), 1):
        yield number, row


def file_lines(path: Path, warn=warn):
    """The rows of one store file, as (row, its line without the line end,
    whether the reader changed the row). Unreadable lines are skipped and
    null-read values named: one warning per line, the first few of each
    file, then one count (LineReader)."""
    reader = LineReader(path, warn)
    number = 0
    for block in file_blocks(path, warn):
        for raw in block:
            number += 1
            read = reader.read(number, raw)
            if read is not None:
                yield read
    reader.done()


# Lines are read in lists of about this many bytes: one call per megabyte
# splits them, and memory holds one such list at a time.
BLOCK = 1 << 20


def file_blocks(path: Path, warn=warn, size: int = BLOCK):
    """The lines of one store file (each with its line end) in lists of
    about *size* bytes; an entry that is not a regular file (a FIFO, a
    directory) is never read, with a warning."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        warn(f'skipped {path}: {err.strerror or err}')
        return
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        warn(f'skipped {path}: not a regular file')
        return
    with os.fdopen(fd, 'rb') as fp:
        while block := fp.readlines(size):
            yield block


class LineReader:
    """The store's reading of one file's lines, line by line: *read* gives
    (row, the line without its line end, whether the reader changed the
    row), or None for a line that is no row. Each problem is one warning
    naming file and line, the first few of the file; *done* then counts
    the rest."""

    def __init__(self, path: Path, warn=warn):
        self.path, self.warn, self.told = path, warn, 0

    def read(self, number: int, raw: bytes):
        try:
            row, nulled = parse_line(raw)
        except Unreadable as err:
            self._tell(number, f'{err}; skipped')
            return None
        if nulled:
            self._tell(number, '; '.join(nulled))
        return row, raw.rstrip(b'\r\n'), bool(nulled) or retyped(raw, row)

    def _tell(self, number: int, what: str) -> None:
        self.told += 1
        if self.told <= MAX_WARNINGS_PER_FILE:
            self.warn(f'{self.path} line {number}: {what}')

    def done(self) -> None:
        if self.told > MAX_WARNINGS_PER_FILE:
            self.warn(f'{self.path}: {self.told - MAX_WARNINGS_PER_FILE} '
                      f'more line(s) with problems')


def read_session_file(path: Path, warn=warn) -> list[dict]:
    """The readable rows of one session file."""
    return [row for _, row in file_rows(path, warn)]


def iter_rows(directory: Path | None = None, warn=warn):
    """Every readable stored row, oldest file first."""
    for path in session_files(directory, warn):
        for _, row in file_rows(path, warn):
            yield row
