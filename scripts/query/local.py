"""Run KQL on the login node, with no Azure: DuckDB reads the local store
(a settled session file from its Parquet copy, parquet_cache.py; the rest
from its JSON lines by json_lines.py's rules) as one view shaped like
ReFrameResults_CL (the columns of bicep/results_schema.json), and
duckdb-kql translates the query.

The store is read once per connection, and only as much of it as the
queries of that connection need (a `Reading`): the session files that can
hold rows of their window, the columns they name. The Parquet copies are
read in place by every query (no copy of their rows held in memory between
queries: memory follows the query, not the history); the rows of files
without a copy are a table, kept compressed (json_lines.create). Each
record is kept once (the base's ``arg_max(TimeGenerated, *) by
record_id``): the older copies of a record
stored twice are found at load, with DuckDB's window function, and left out
by an anti join (nothing to do when record_ids are already unique);
``clusterproof_results`` is a view of the rest of results.kql, so every
query of the connection reads the same deduplicated rows. The KQL text sent
to Log Analytics is unchanged.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import sys
import time
import uuid
import weakref
from pathlib import Path
from typing import NamedTuple

import duckdb

from config.results.rows import schema as row_schema
from config.results.store import files as store
from scripts.query import (json_lines, library, needs, older_copies,
                           parquet_cache, parquet_packs, sql_cache,
                           sql_output, translator)
from scripts.query.json_lines import sql_string as _sql_string
from scripts.query.needs import Reading
from scripts.query.result import QueryFailed, Result, Stream, plain

_KUSTO_TYPES = {'DOUBLE': 'real', 'FLOAT': 'real', 'BIGINT': 'long',
                'INTEGER': 'int', 'HUGEINT': 'long', 'VARCHAR': 'string',
                'BOOLEAN': 'bool', 'JSON': 'dynamic', 'DATE': 'datetime'}
# A session file last written more than this before a window starts cannot
# hold a row completed in it (the margin covers clocks that disagree).
CLOCK_SLACK = dt.timedelta(days=1)
MEMORY_VARIABLE = 'CLUSTERPROOF_QUERY_MEMORY'
DEFAULT_MEMORY = '640MB'
THREAD_MEMORY = 320 * 1000 ** 2


def stored_files(base: Path, start: dt.datetime | None) -> list[str]:
    """The session files to read: every one, or those written to since
    *start* (less CLOCK_SLACK)."""
    return [path for path, _ in _stored(base, start)]


def _stored(base: Path, start: dt.datetime | None):
    """(path, stat) of the session files to read. A file's modification
    time is its last append, after every row in it completed; a copy that
    lost its times only makes the file read when it need not be."""
    return _within(_every_file(base), start)


def _every_file(base: Path):
    every = []
    for path in store.session_files(base):
        try:
            every.append((str(path), path.stat()))
        except OSError:          # gone since listed: nothing to read
            continue
    return every


def _within(files, start: dt.datetime | None):
    """Those of *files* ((path, stat) pairs) that can hold rows completed
    since *start*."""
    if start is None:
        return files
    since = (start - CLOCK_SLACK).timestamp()
    return [(path, stat) for path, stat in files if stat.st_mtime >= since]


def _schema_columns(reading: Reading) -> list[dict]:
    """The columns to load: those asked for and those the base reads."""
    wanted = reading.columns
    if wanted is not None:
        wanted = wanted | needs.named_columns(library.base_text())
    return [c for c in row_schema.schema()['columns']
            if wanted is None or c['name'] in wanted]


# The rows read from JSON lines (the sessions without a cache entry), in a
# compressed in-memory database of their own (json_lines.create); every
# stored row with what names it (_src, _pos); the older copies of records
# stored more than once.
_JSON_DB = '_clusterproof_json'
_LINES = '_clusterproof_lines'
_ROWS = '_clusterproof_rows'
_OLDER = '_clusterproof_older_copies'


class Loaded(NamedTuple):
    """Where a connection's rows are: the table of those read from JSON
    lines, the SQL that reads the entries (None without any), the columns
    both hold (as SQL), and where the former go to make room (spill)."""
    lines: str
    from_entries: str | None
    selected: str
    spills: Path


def _load(con, table: str, columns: list[dict], files, every,
          cache, defer: bool) -> tuple[int, Loaded]:
    """The rows of *files* ((path, stat) pairs, of *every* session file) as
    the view *table*, each record once: the Parquet entries of the settled
    ones, or packs of them, read in place by every query (nothing of them
    held in memory between queries), and a table of the rest, read from
    their JSON lines (with *defer*, those of files the cache lacks may be
    too: parquet_cache.load). Returns how many lines could not be read as
    a row, and where the rows are (Loaded)."""
    lines = json_lines.create(con, _JSON_DB, _LINES, columns)
    existing = [str(found[0]) for found in
                (cache.find(path, stat) for path, stat in every) if found]
    wanted = {found[0].name for found in
              (cache.find(path, stat) for path, stat in files) if found}
    packs = parquet_packs.covering(con, cache, wanted, existing)
    window = {path for path, _ in files}
    entries, unreadable = parquet_cache.load(
        con, lines, columns, files, cache, memory_bytes(memory_limit()),
        packs.covered, defer,
        [(path, stat) for path, stat in every if path not in window])
    entries = parquet_packs.files_to_read(con, cache, packs, entries)
    selected = json_lines.names(columns)
    from_entries = parquet_cache.reading(entries, selected) if entries \
        else None
    _rows_view(con, selected, from_entries,
               f"SELECT {selected}, '' AS _src, rowid AS _pos "
               f'FROM {lines} WHERE record_id IS NOT NULL')
    rows = f'SELECT {selected} FROM "{_ROWS}"'
    from_lines = con.execute(f'SELECT count(record_id) FROM {lines}'
                             ).fetchall()[0][0]
    if older_copies.find(con, _ROWS, _OLDER, entries, from_lines, cache):
        rows += f' ANTI JOIN "{_OLDER}" USING (_src, _pos)'
    con.execute(f'CREATE VIEW "{table}" AS {rows}')
    return unreadable, Loaded(lines, from_entries, selected,
                              _spill_directory(cache.results_dir))


def _rows_view(con, selected: str, from_entries: str | None,
               from_lines: str) -> None:
    """The view of every stored row read (_ROWS), from the entries and the
    rows read from JSON lines; replaced when the latter move (spill)."""
    parts = [part for part in (from_entries, from_lines) if part]
    con.execute(f'CREATE OR REPLACE VIEW "{_ROWS}" AS '
                f'{" UNION ALL ".join(parts)}')


class Connection:
    """A DuckDB connection over the loaded store, with what its queries
    need to know once: what translates them, what the load found;
    everything else (execute, sql, ...) is the DuckDB connection's own."""

    def __init__(self, con, translated: translator.Translator,
                 unreadable: int, damaged: list[str], loaded: Loaded):
        self.duckdb = con
        self.translator = translated
        self.unreadable = unreadable     # lines that could not be read
        self.damaged = damaged           # the files that may hold them
        self._loaded = loaded
        self.spilled = None              # where spill() put those rows

    def __getattr__(self, name):
        return getattr(self.duckdb, name)

    def spill(self) -> bool:
        """Writes the rows read from JSON lines to a Parquet file beside
        DuckDB's own spills and reads them from there, as entries are read,
        once; False when there is nothing (more) to move. A query that ran
        out of memory over them may then fit: at 1M rows and 640MB, cold
        node_outliers --all failed over the table and ran over the file.
        The file is removed when the connection is closed or collected, or
        the process exits."""
        lines, from_entries, selected, where = self._loaded
        if self.spilled or not self.duckdb.execute(
                f'SELECT count(*) FROM {lines}').fetchall()[0][0]:
            return False
        where.mkdir(parents=True, exist_ok=True)
        _remove_stale_spills(where)
        path = where / f'{_SPILL_PREFIX}{os.getpid()}-{uuid.uuid4().hex}.parquet'
        self._removal = weakref.finalize(self, parquet_cache.remove, path)
        self.duckdb.execute(
            f'COPY (SELECT {selected}, rowid AS _pos FROM {lines} WHERE '
            f'record_id IS NOT NULL) TO {_sql_string(str(path))} '
            '(FORMAT parquet)')
        _rows_view(self.duckdb, selected, from_entries,
                   f"SELECT {selected}, '' AS _src, _pos FROM read_parquet("
                   f'{_sql_string(str(path))}, hive_partitioning=false)')
        self.duckdb.execute(f'DROP TABLE {lines}')
        self.spilled = path
        return True

    def close(self) -> None:
        self.duckdb.close()
        if self.spilled:
            self._removal()


# A spill file is removed by the process that wrote it; one a killed
# process left is removed by the next spill once it is older than any query
# runs (by age, not by its pid: a store shared by several hosts sees pids
# of processes it cannot look for).
_SPILL_PREFIX = 'json-lines-'
STALE_SPILL = dt.timedelta(days=1)


def _remove_stale_spills(where: Path) -> None:
    oldest = time.time() - STALE_SPILL.total_seconds()
    for path in where.glob(f'{_SPILL_PREFIX}*.parquet'):
        try:
            if path.stat().st_mtime < oldest:
                path.unlink()
        except OSError:
            continue                 # gone already, or not ours to remove


def _damaged(files, cache: parquet_cache.Cache,
             unreadable: int) -> list[str]:
    """Of *files* ((path, stat) pairs, in their order), those that may hold
    the *unreadable* lines: each whose cache entry counts some, and, when
    the entries do not account for them all, each read without an entry
    (a session still writing, or a cache that cannot be written)."""
    found = [(path, cache.find(path, stat)) for path, stat in files]
    uncounted = unreadable > sum(entry[1] for _, entry in found if entry)
    return [path for path, entry in found
            if (entry[1] > 0 if entry else uncounted)]


def connect(results_dir: Path | None = None, reading: Reading = Reading(),
            filters: library.Filters | None = None, defer: bool = False,
            queries: tuple[str, ...] = (), now: dt.datetime | None = None):
    """A Connection with the store's rows (those *reading* asks for) as
    ReFrameResults_CL, each record once, and clusterproof_results: the base
    query (with *filters*) over it. *defer*: a store the cache lacks much
    of is read as its queries read it, and cached in the background
    (cache_builder.py), as a command's connection is. *queries* (KQL
    texts, at *now*) are translated while the store is read
    (translator.py)."""
    schema = row_schema.schema()
    # What duckdb_kql.connect() does (its docstring: duckdb.connect, then
    # UTC for KQL's datetimes), without importing duckdb-kql's parser.
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    results_dir = results_dir or store.results_dir()
    _bound_memory(con, results_dir)
    columns = _schema_columns(reading)
    translating = translator.Translating(
        schema['table'], columns, _filter_conditions(filters),
        sql_cache.directory(results_dir), queries=list(queries), now=now)
    translating.start()
    try:
        every = _every_file(results_dir)
        files = _within(every, reading.start)
        entries = parquet_cache.Cache(results_dir, schema['columns'])
        unreadable, loaded = _load(
            con, schema['table'], columns, files, every, entries, defer)
    finally:
        translating.join()
    with _engine_errors():
        translated = translating.result()
    con = Connection(con, translated, unreadable,
                     _damaged(files, entries, unreadable), loaded)
    con.execute(f'CREATE VIEW "{library.BASE_FUNCTION}" AS {translated.base}')
    return con


def _filter_conditions(filters: library.Filters | None) -> str:
    """*filters* (what Filters.kql() adds to the base for Log Analytics) as
    SQL over the base's view: the base's translation, cached by its text,
    then serves every --since, which kql() writes as a new literal each
    second."""
    if filters is None:
        return ''
    conditions = []
    if filters.since:
        stamp = filters.since.astimezone(dt.timezone.utc)
        conditions.append(
            f"completed >= TIMESTAMPTZ '{stamp:%Y-%m-%d %H:%M:%S}+00'")
    for column, value in (('cluster', filters.cluster),
                          ('check_partition', filters.partition)):
        if value:
            conditions.append(f'"{column}" = {_sql_string(value)}')
    return ' AND '.join(conditions)


def memory_limit() -> str:
    """DuckDB's memory limit for a query (CLUSTERPROOF_QUERY_MEMORY, e.g.
    2GB; default 640MB): beyond it joins and aggregations spill to disk."""
    return os.environ.get(MEMORY_VARIABLE) or DEFAULT_MEMORY


def _spill_directory(results_dir: Path) -> Path:
    return sql_cache.directory(results_dir).parent / 'duckdb'


def _bound_memory(con, results_dir: Path) -> None:
    """Spills go beside the store (cache/duckdb), never to the current
    directory (DuckDB's default for an in-memory database); one thread per
    THREAD_MEMORY of the limit (threads_for). A limit DuckDB refuses is its
    error, naming the variable."""
    spill = _spill_directory(results_dir)
    limit = memory_limit()
    try:
        con.execute(f'SET memory_limit = {_sql_string(limit)}')
    except duckdb.Error as err:
        raise QueryFailed(f'{MEMORY_VARIABLE}={limit}: {err}') from None
    con.execute(f'SET temp_directory = {_sql_string(str(spill))}')
    # Every query of a connection reads the same Parquet entries again.
    con.execute("SET parquet_metadata_cache = true")
    cores = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    threads = threads_for(memory_bytes(limit), int(cores))
    con.execute(f'SET threads = {threads}')


# DuckDB's units for memory_limit (the setting: https://duckdb.org/docs/2.0/
# configuration/overview, "SET memory_limit = '10GB'"), as DuckDB 2.0.1 names
# them when it refuses one (SET memory_limit = '1000000000'): "KB, MB, GB, TB
# for 1000^i units or KiB, MiB, GiB, TiB for 1024^i units", in any case; its
# parser (duckdb/duckdb src/main/config.cpp DBConfig::ParseMemoryLimit, commit
# 0024da969a6b6221ad1c77cb0b5535867d5aaa52) also takes each 1000^i unit by
# its letter and its name (4G, 640M, 1gigabyte), and b, byte, bytes.
_UNITS = {'kib': 1024, 'mib': 1024 ** 2, 'gib': 1024 ** 3, 'tib': 1024 ** 4,
          **{spelling: 1000 ** power
             for power, names in enumerate((
                 ('b', 'byte', 'bytes'), ('k', 'kb', 'kilobyte', 'kilobytes'),
                 ('m', 'mb', 'megabyte', 'megabytes'),
                 ('g', 'gb', 'gigabyte', 'gigabytes'),
                 ('t', 'tb', 'terabyte', 'terabytes')))
             for spelling in names}}
_SIZE = re.compile(r'\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-z]+)\s*',
                   re.IGNORECASE)


def memory_bytes(limit: str, variable: str = MEMORY_VARIABLE) -> int:
    """The bytes of a size such as 640MB, 4G or 1GiB (MB is 1000^2 bytes,
    MiB 2^20), set as *variable*; a form DuckDB also takes but this does
    not (a percentage, none) says what it takes."""
    size = _SIZE.fullmatch(limit)
    if not size or size.group(2).lower() not in _UNITS:
        raise QueryFailed(
            f'{variable}={limit}: give a number and a unit, e.g. '
            '640MB, 2GB or 1GiB (KB, MB, GB, TB are 1000^i bytes; KiB, '
            'MiB, GiB, TiB 1024^i)')
    return int(float(size.group(1)) * _UNITS[size.group(2).lower()])


def threads_for(limit: int, cores: int) -> int:
    """Threads for a memory limit of *limit* bytes: one per THREAD_MEMORY
    (two at the 640MB default), at least one, at most *cores*. Each thread
    holds hash tables and sort runs of its own. The rows are read in place
    from the Parquet entries, not held in memory: at 1M rows and 640MB, two
    threads ran node_outliers --all (988,740 rows) in 733 MiB and the report
    in half the time of one. While a loaded table held the rows, two
    threads at 640MB ran out of memory in --all's final sort. DuckDB's
    guide: "Aim for 1-4 GB memory per thread", 125 MB at the least
    (https://duckdb.org/docs/2.0/guides/performance/environment)."""
    return max(1, min(cores, limit // THREAD_MEMORY))


def unreadable_lines(con: Connection) -> int:
    """How many stored lines could not be read as a row."""
    return con.unreadable


def damaged_files(con: Connection) -> list[str]:
    """The session files that may hold those lines, for the store's own
    reader to name them (line by line) without reading every file again."""
    return con.damaged


def _kusto_type(duckdb_type) -> str:
    name = str(duckdb_type).upper()
    if name.startswith('TIMESTAMP'):
        return 'datetime'
    if name.endswith('[]') or name.startswith(('STRUCT', 'MAP')):
        return 'dynamic'
    return _KUSTO_TYPES.get(name, 'string')


# Rows per chunk of a streamed result.
CHUNK_ROWS = 10_000


def run(con, kql: str, now: dt.datetime | None = None) -> Result:
    """Run *kql*; an unsupported construct raises UnsupportedQuery naming
    it."""
    return stream(con, kql, now).result()


def stream(con, kql: str, now: dt.datetime | None = None,
           chunk_rows: int = CHUNK_ROWS) -> Stream:
    """*kql*'s columns, and its rows a chunk at a time as they are read.
    The query runs now, its first chunk read, and *con* is busy until the
    last one is: the columns come from the query's own cursor (asking
    DuckDB for them first bound every query twice, 0.8 s of the report)."""
    with _engine_errors():
        sql, parameters = con.translator.translate(kql, now)
        con.abort()      # rows an earlier statement left unread
        cursor, fetched = _first_chunk(con, sql, parameters, chunk_rows)
    return _stream_of(cursor, fetched, chunk_rows)


def _stream_of(cursor, fetched, chunk_rows) -> Stream:
    described = cursor.description
    types = [_kusto_type(column[1]) for column in described]
    return Stream([column[0] for column in described], types,
                  _chunks(cursor, fetched, types, chunk_rows))


def _chunks(cursor, fetched, types, chunk_rows):
    converters = [_converter(kind) for kind in types]
    with _engine_errors():
        while fetched:
            yield [[convert(value) for convert, value in zip(converters, row)]
                   for row in fetched]
            fetched = cursor.fetchmany(chunk_rows)


def _first_chunk(con, sql, parameters, chunk_rows):
    """The cursor and its first rows."""
    def first():
        cursor = con.execute(sql, parameters or None)
        return cursor, cursor.fetchmany(chunk_rows)
    return _spilling(con, first)


def _spilling(con, run):
    """run(), once more after an out-of-memory error before any row: the
    rows read from JSON lines are moved to a Parquet file first
    (Connection.spill; cold node_outliers --all's final sort of 1M rows at
    640MB)."""
    try:
        return run()
    except duckdb.OutOfMemoryException:
        if not con.spill():
            raise
    return run()


def write(con, kql: str, writer, out,
          now: dt.datetime | None = None) -> int:
    """*writer*'s text (output.write_table, write_csv or write_json) of
    *kql*'s rows; the number of rows. A table or CSV of more than
    sql_output.PYTHON_ROWS rows of the types sql_output writes is made by
    DuckDB, the same text (a million rows of node_outliers --all never
    become Python values)."""
    if not sql_output.makes(writer):
        return writer(stream(con, kql, now), out)
    with _engine_errors():
        sql, parameters = con.translator.translate(kql, now)
        con.abort()      # rows an earlier statement left unread
        stored = _spilling(con, lambda: sql_output.Stored(
            con.duckdb, sql, parameters))
        try:
            if stored.rows > sql_output.PYTHON_ROWS:
                written = sql_output.write(stored, writer, out)
                if written is not None:
                    return written
            cursor = con.execute(f'SELECT * FROM {stored.table}')
            return writer(_stream_of(cursor, cursor.fetchmany(CHUNK_ROWS),
                                     CHUNK_ROWS), out)
        finally:
            stored.drop()


@contextlib.contextmanager
def _engine_errors():
    """DuckDB's and duckdb-kql's errors as the QueryFailed that says what
    to do."""
    try:
        yield
    except duckdb.OutOfMemoryException as err:
        raise QueryFailed(f'{err}; give the local engine more with '
                          f'{MEMORY_VARIABLE} (now {memory_limit()}), or '
                          'narrow the query (--since)') from None
    except duckdb.Error as err:
        raise InvalidQuery(str(err)) from None
    except Exception as err:
        kql = sys.modules.get('duckdb_kql')      # raised only once imported
        if kql is None or not isinstance(err, kql.KqlError):
            raise
        if isinstance(err, kql.KqlUnsupportedError):
            raise UnsupportedQuery(
                f'the local engine (duckdb-kql) cannot run '
                f'{unsupported(err)}. Rewrite that part, or run it in Log '
                'Analytics (--workspace).') from None
        raise InvalidQuery(str(err)) from None


def unsupported(err) -> str:
    """The construct and where it is, in the query's own terms (duckdb-kql's
    hint names its own source files: not the reader's business)."""
    kind, _, name = str(err.construct).rpartition(':')
    what = f'the {kind} {name}' if kind else repr(name)
    return f'{what} (at {err.span})' if err.span else what


def _converter(kind: str):
    """plain() for one column; identity where DuckDB's value is plain
    already (numbers, strings, booleans)."""
    if kind in ('real', 'long', 'int', 'bool', 'string'):
        return lambda value: value
    return lambda value: plain(value, kind)


class UnsupportedQuery(QueryFailed):
    """Valid KQL that the local engine cannot run (Log Analytics can)."""


class InvalidQuery(QueryFailed):
    """KQL with a syntax error or an unknown name."""
