"""The store's index: one DuckDB file holding the rows of every settled
session file, each record once; deleting it only makes the next query build
it again. Its tables: ``rows`` (every schema column, and the file a row came
from), ``ingested`` (each file read: its size, modification time and
unreadable lines) and ``meta`` (the store and json_lines.fingerprint: either
changed, it is built again, as when a file it holds shrank or vanished).

The query that finds a settled file the index lacks, or holds at another
size or time, reads it whole in a transaction and removes the older copies
of each record (the latest TimeGenerated kept, as results.kql's arg_max; the
first stored on a tie). DuckDB lets one process write the file, and none
read it then (https://duckdb.org/docs/stable/connect/concurrency): a lock
file beside it is held shared by each command reading, exclusively by the
one writing, which writes only when no command reads. The rest is read at
query time; a reader that finds the index being written waits WAIT_VARIABLE
seconds, then reads every JSON line and says so (scripts/query/README.md).
"""
from __future__ import annotations

import dataclasses
import fcntl
import os
import time
import typing
from pathlib import Path

import duckdb

from config.results import batching, settings
from config.results.store import files as store
from scripts.query import json_lines
from scripts.query.json_lines import FILE_COLUMN, sql_string

FOLDER_VARIABLE = 'CLUSTERPROOF_QUERY_INDEX_DIR'
WAIT_VARIABLE = 'CLUSTERPROOF_QUERY_INDEX_WAIT'
DEFAULT_WAIT = 10.0
SETTLED_SECONDS = 600
NAME, LOCK = 'index.duckdb', 'index.lock'
ATTACHED = 'clusterproof_index'      # its name on a query's connection
ROWS = f'{ATTACHED}.rows'
_OLDEST = "TIMESTAMPTZ '-infinity'"
_warned = []


def folder(results_dir: Path) -> Path:
    """The query engine's one cache folder: the index, its lock, the
    translations, DuckDB's spill directory (FOLDER_VARIABLE moves it, e.g.
    to a local disk when the home is on NFS)."""
    chosen = os.environ.get(FOLDER_VARIABLE)
    return Path(chosen) if chosen else results_dir.parent / 'cache' / 'query'


@dataclasses.dataclass(frozen=True)
class Stored:
    path: str
    size: int
    mtime_ns: int

    def settled(self) -> bool:
        return self.mtime_ns < (time.time() - SETTLED_SECONDS) * 1e9


def listing(results_dir: Path) -> list[Stored]:
    found = []
    for path in store.session_files(results_dir):
        try:
            stat = path.stat()
        except OSError:              # gone since listed: nothing to read
            continue
        found.append(Stored(str(path), stat.st_size, stat.st_mtime_ns))
    return found


def _lock(lock, mode: int, wait: float = 0.0) -> bool:
    """flock *mode* (LOCK_SH to read, LOCK_EX to write) on the *lock* file
    within *wait* seconds, or False, and then none held (flock(2))."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(lock, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


@dataclasses.dataclass
class Opened:
    """How a connection reads the store: the index attached or not, the
    files read at query time, the index's counts of unreadable lines, a
    note for the reader, the lock held."""
    attached: bool
    live: list[Stored]
    unreadable: dict[str, int]
    note: str | None = None
    lock: typing.IO | None = None     # the lock file, held shared


def open_index(con, results_dir: Path, columns: list[dict], configure,
               batch_bytes: int) -> Opened:
    """Attaches the index to *con* (read only), brought up to date first
    when no other command reads it (*configure*, *batch_bytes*: ingest's)."""
    every = listing(results_dir)
    where = folder(results_dir)
    try:
        where.mkdir(parents=True, exist_ok=True)
        lock = open(where / LOCK, 'a')
    except OSError as err:
        return Opened(False, every, {}, f'no query index can be kept in '
                      f'{where} ({err.strerror}): every JSON line was read')
    path = where / NAME
    key = [json_lines.fingerprint(columns), str(results_dir.resolve())]
    wait = settings.seconds(WAIT_VARIABLE, DEFAULT_WAIT, maximum=3600)
    for attempt in (1, 2):
        if not _lock(lock, fcntl.LOCK_SH, wait):
            lock.close()
            return Opened(False, every, {}, f'another command is writing '
                          f'the query index; waited {wait:g} s '
                          f'({WAIT_VARIABLE}), then read every JSON line')
        usable, todo, live, unreadable = _plan(con, path, key, every)
        if attempt == 2 or (usable and not todo):
            break
        _detach(con)
        if _lock(lock, fcntl.LOCK_EX):
            _ingest_or_warn(path, key, columns, todo, not usable, configure,
                            batch_bytes)
    if not usable:
        _detach(con)
        lock.close()
        return Opened(False, every, {}, 'the query index is not up to date '
                      '(another command reads it, or it cannot be written): '
                      'every JSON line was read')
    return Opened(True, todo + live, unreadable, None, lock)


def _plan(con, path: Path, key: list[str], files: list[Stored]):
    """What the index holds of *files*: whether it lost none of its own
    (usable), the settled files to ingest, those still writing (read at
    query time), the unreadable lines of the rest."""
    known = _attach(con, path, key)
    listed = {f.path: f for f in files}
    usable = known is not None and all(
        file in listed and listed[file].size >= size
        for file, (size, _, _) in known.items())
    todo, live, unreadable = [], [], {}
    for f in files:
        held = (known or {}).get(f.path)
        if held is not None and held[:2] == (f.size, f.mtime_ns):
            unreadable[f.path] = held[2]
        else:
            (todo if f.settled() else live).append(f)
    return usable, todo, live, unreadable


def _attach(con, path: Path, key: list[str]):
    """{file: (size, mtime_ns, unreadable)} of the index, attached; None
    (not attached) for none, or one of another key, or unreadable."""
    if not path.exists():
        return None
    try:
        con.execute(f'ATTACH {sql_string(str(path))} AS {ATTACHED} '
                    '(READ_ONLY)')
        found = con.execute(f'SELECT fingerprint, store FROM {ATTACHED}.meta'
                            ).fetchall()
        if found != [tuple(key)]:
            _detach(con)
            return None
        return {file: (size, mtime, lost) for file, size, mtime, lost in
                con.execute(f'SELECT * FROM {ATTACHED}.ingested').fetchall()}
    except duckdb.Error:
        _detach(con)
        return None


def _detach(con) -> None:
    con.execute(f'DETACH DATABASE IF EXISTS {ATTACHED}')


def _ingest_or_warn(path, key, columns, files, rebuild, configure,
                    batch_bytes) -> None:
    """ingest(), or one warning when it cannot write (not for want of
    memory: local.py names the setting)."""
    try:
        ingest(path, key, columns, files, rebuild, configure, batch_bytes)
    except duckdb.OutOfMemoryException:
        raise
    except (duckdb.Error, OSError) as err:
        if not _warned:
            _warned.append(err)
            why = getattr(err, 'strerror', None) or str(err).splitlines()[0]
            store.warn(f'the query index {path} cannot be written ({why}); '
                       'queries read the JSON lines it lacks (slower)')


def ingest(path: Path, key: list[str], columns: list[dict],
           files: list[Stored], rebuild: bool, configure,
           batch_bytes: int) -> None:
    """Adds *files* to the index at *path* (a grown one read whole again),
    a transaction per batch of at most *batch_bytes* of them, each
    checkpointed: DuckDB holds the rows of a batch in memory until then
    (*configure* sets the connection; *rebuild*: a new index first)."""
    if rebuild:
        for stale in (path, path.with_name(path.name + '.wal')):
            stale.unlink(missing_ok=True)
    con = duckdb.connect(str(path))
    try:
        configure(con)
        con.execute('SET preserve_insertion_order = false')
        if rebuild:
            con.execute(
                f'BEGIN; CREATE TABLE rows ({json_lines.definitions(columns)}'
                f', "{FILE_COLUMN}" VARCHAR); CREATE TABLE ingested (file '
                'VARCHAR, size BIGINT, mtime_ns BIGINT, unreadable BIGINT); '
                'CREATE TABLE meta (fingerprint VARCHAR, store VARCHAR); '
                f'INSERT INTO meta VALUES ({", ".join(map(sql_string, key))})'
                '; COMMIT')
        for batch in batching.runs_under(files, batch_bytes,
                                         lambda f: f.size):
            con.begin()
            _append(con, columns, batch)
            con.commit()
            con.execute('CHECKPOINT')   # its rows to disk, out of memory
    finally:
        con.close()


def _append(con, columns: list[dict], files: list[Stored]) -> None:
    names = [f.path for f in files]
    con.execute(f'INSERT INTO rows {json_lines.select(names, columns)}')
    lost = json_lines.unreadable_by_file(con, 'rows', names)
    con.execute('DELETE FROM rows WHERE record_id IS NULL')
    _remove_older_copies(con, names)
    con.execute('DELETE FROM ingested WHERE file IN (SELECT unnest(?))',
                [names])
    con.executemany('INSERT INTO ingested VALUES (?, ?, ?, ?)',
                    [[f.path, f.size, f.mtime_ns, lost[f.path]]
                     for f in files])


def _remove_older_copies(con, files: list[str]) -> None:
    """Keeps one row of each record_id that a row of *files* holds."""
    con.execute(f'DELETE FROM rows WHERE rowid IN ({_older("rows")})', [files])


def _older(table: str, among: str = f'WHERE "{FILE_COLUMN}" IN (SELECT '
           'unnest(?))') -> str:
    """SQL of the rowids of the copies of *table*'s records (those of its
    rows *among*) that are not the latest."""
    return (f'SELECT rowid AS copy FROM {table} WHERE record_id IN (SELECT '
            f'record_id FROM {table} WHERE record_id IN (SELECT record_id '
            f'FROM {table} {among}) GROUP BY record_id HAVING count(*) > 1) '
            'QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY '
            f'coalesce("TimeGenerated", {_OLDEST}) DESC, rowid) > 1')


def combined(con, live: str | None, attached: bool, selected: str) -> str:
    """SQL of every row, each record once, of the index and of *live* (a
    table of rows read at query time, or None): the latest copy of each
    (a live one on a tie)."""
    parts = []
    if attached:
        replaced = ''
        if live:
            con.execute(
                f'CREATE TEMP TABLE replaced AS SELECT DISTINCT i.record_id '
                f'FROM {ROWS} i JOIN {live} l ON i.record_id = l.record_id '
                f'AND {_later("l", "i", ">=")}')
            if _count(con, 'replaced'):
                replaced = ' ANTI JOIN replaced USING (record_id)'
        parts.append(f'SELECT {selected} FROM {ROWS}{replaced}')
    if live:
        con.execute(f'CREATE TEMP TABLE older AS {_older(live, "")}')
        if attached:
            con.execute(f'INSERT INTO older SELECT l.rowid FROM {live} l '
                        f'SEMI JOIN {ROWS} i ON i.record_id = l.record_id AND '
                        f'{_later("i", "l", ">")}')
        older = (' WHERE rowid NOT IN (SELECT copy FROM older)'
                 if _count(con, 'older') else '')
        parts.append(f'SELECT {selected} FROM {live}{older}')
    return ' UNION ALL '.join(parts)


def _later(this: str, that: str, than: str) -> str:
    return (f'coalesce({this}."TimeGenerated", {_OLDEST}) {than} '
            f'coalesce({that}."TimeGenerated", {_OLDEST})')


def _count(con, table: str) -> int:
    return con.execute(f'SELECT count(*) FROM {table}').fetchall()[0][0]
