"""Run KQL on the login node, with no Azure: DuckDB reads the store's index
(index.py) and the files of sessions still writing as one view shaped like
ReFrameResults_CL, each record once, as results.kql's arg_max keeps it;
clusterproof_results is a view of the rest of results.kql over it, so every
query of a connection reads the same rows (translator.py translates them).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path

import duckdb

from config.results import batching
from config.results.rows import schema as row_schema
from config.results.store import files as store
from scripts.query import index, json_lines, library, output, translator
from scripts.query.json_lines import sql_string
from scripts.query.memory import (DEFAULT_MEMORY, MEMORY_VARIABLE, configure,
                                  memory_bytes, memory_limit)
from scripts.query.result import QueryFailed, Result, Stream, plain

_KUSTO_TYPES = {'DOUBLE': 'real', 'FLOAT': 'real', 'BIGINT': 'long',
                'INTEGER': 'int', 'HUGEINT': 'long', 'VARCHAR': 'string',
                'BOOLEAN': 'bool', 'JSON': 'dynamic', 'DATE': 'datetime'}
_PLAIN_ALREADY = ('real', 'long', 'int', 'bool', 'string')
# The rows read at query time, in an in-memory database that DuckDB
# compresses at each checkpoint (https://duckdb.org/docs/stable/sql/
# statements/checkpoint, "In-memory tables also support compression").
_LIVE_DB = '_clusterproof_live'
_LIVE = f'{_LIVE_DB}.lines'
CHUNK_ROWS = 10_000          # rows per chunk of a streamed result
# A CSV or JSON result of more rows than this is written by DuckDB (COPY):
# a million rows of node_outliers --all never become Python values.
PYTHON_ROWS = 2_000
_RESULT = '_clusterproof_result'


class Connection:
    """A DuckDB connection over the store (execute, ... are DuckDB's), its
    translator and what the reading found; closing it frees the index."""

    def __init__(self, con, translated: translator.Translator,
                 opened: index.Opened, live: dict[str, int], folder: Path):
        self.duckdb = con
        self.translator = translated
        lost = {**opened.unreadable, **live}
        self.unreadable = sum(lost.values())   # lines that could not be read
        self.damaged = [path for path, count in lost.items() if count]
        self.notes = [opened.note] if opened.note else []
        self.folder = folder
        self._release = weakref.finalize(
            self, opened.lock.close if opened.lock else lambda: None)

    def __getattr__(self, name):
        return getattr(self.duckdb, name)

    def close(self) -> None:
        self.duckdb.close()
        self._release()


def connect(results_dir: Path | None = None,
            filters: library.Filters | None = None):
    """A Connection with the store's rows as ReFrameResults_CL, each record
    once, and clusterproof_results, the base (with *filters*) over it."""
    schema = row_schema.schema()
    columns = schema['columns']
    con = duckdb.connect()      # UTC for KQL, as duckdb_kql.connect() sets
    con.execute("SET TimeZone='UTC'")
    results_dir = results_dir or store.results_dir()
    folder = index.folder(results_dir)
    configure(con, folder)
    with _engine_errors():
        opened = index.open_index(
            con, results_dir, columns, lambda other: configure(other, folder),
            memory_bytes(memory_limit(), con) // 8)
        live = _read_live(con, opened.live, columns)
        names = ', '.join(f'"{c["name"]}"' for c in columns)
        rows = index.combined(con, _LIVE if opened.live else None,
                              opened.attached, names)
        con.execute(f'CREATE VIEW "{schema["table"]}" AS '
                    f'{rows or f"SELECT {names} FROM {_LIVE}"}')
        translated = translator.Translator(
            schema['table'], columns, _filter_conditions(filters), folder)
    con = Connection(con, translated, opened, live, folder)
    con.execute(f'CREATE VIEW "{library.BASE_FUNCTION}" AS {translated.base}')
    return con


def _read_live(con, files: list[index.Stored],
               columns: list[dict]) -> dict[str, int]:
    """Reads *files* into _LIVE a batch at a time, the rows before
    compressed first; returns each file's unreadable lines (removed). In no
    set order: in order, DuckDB inserts with one thread once memory runs
    short (11 s instead of 5.5 s at 1M rows and 640MB)."""
    con.execute(f"ATTACH ':memory:' AS {_LIVE_DB} (COMPRESS)")
    con.execute(f'CREATE TABLE {_LIVE} ({json_lines.definitions(columns)}, '
                f'"{json_lines.FILE_COLUMN}" VARCHAR)')
    if not files:
        return {}
    con.execute('SET preserve_insertion_order = false')
    try:
        for number, batch in enumerate(batching.runs_under(
                files, memory_bytes(memory_limit(), con), lambda f: f.size)):
            if number:
                con.execute(f'CHECKPOINT {_LIVE_DB}')
            paths = [f.path for f in batch]
            con.execute(f'INSERT INTO {_LIVE} '
                        f'{json_lines.select(paths, columns)}')
    finally:
        con.execute('RESET preserve_insertion_order')
    lost = json_lines.unreadable_by_file(con, _LIVE, [f.path for f in files])
    con.execute(f'DELETE FROM {_LIVE} WHERE record_id IS NULL')
    return lost


def _filter_conditions(filters: library.Filters | None) -> str:
    """*filters* (Filters.kql() for Log Analytics) as SQL over the base's
    view: one cached translation of the base serves every --since."""
    conditions = []
    if filters and filters.since:
        stamp = filters.since.astimezone(dt.timezone.utc)
        conditions.append(
            f"completed >= TIMESTAMPTZ '{stamp:%Y-%m-%d %H:%M:%S}+00'")
    for column, value in (('cluster', filters and filters.cluster),
                          ('check_partition', filters and filters.partition)):
        if value:
            conditions.append(f'"{column}" = {sql_string(value)}')
    return ' AND '.join(conditions)


def _kusto_type(duckdb_type) -> str:
    name = str(duckdb_type).upper()
    if name.startswith('TIMESTAMP'):
        return 'datetime'
    if name.endswith('[]') or name.startswith(('STRUCT', 'MAP')):
        return 'dynamic'
    return _KUSTO_TYPES.get(name, 'string')


def run(con, kql: str, now: dt.datetime | None = None) -> Result:
    """Run *kql*; a construct duckdb-kql cannot run is named in the
    QueryFailed."""
    return stream(con, kql, now).result()


def _execute(con, kql: str, now: dt.datetime | None, into: str = ''):
    """*kql* translated and run on *con* (*into*: 'CREATE ... AS ')."""
    sql, parameters = con.translator.translate(kql, now)
    con.abort()      # rows an earlier statement left unread
    return con.execute(into + sql, parameters or None)


def stream(con, kql: str, now: dt.datetime | None = None,
           chunk_rows: int = CHUNK_ROWS) -> Stream:
    """*kql*'s columns (from its own cursor), and its rows a chunk at a
    time as they are read: *con* is busy until the last one is."""
    with _engine_errors():
        return _stream_of(_execute(con, kql, now), chunk_rows)


def _stream_of(cursor, chunk_rows: int = CHUNK_ROWS) -> Stream:
    fetched = cursor.fetchmany(chunk_rows)
    types = [_kusto_type(column[1]) for column in cursor.description]
    return Stream([column[0] for column in cursor.description], types,
                  _chunks(cursor, fetched, types, chunk_rows))


def _chunks(cursor, fetched, types, chunk_rows):
    """Rows of plain values: plain() where DuckDB's are not already."""
    converters = [(lambda value: value) if kind in _PLAIN_ALREADY else
                  (lambda value, kind=kind: plain(value, kind))
                  for kind in types]
    with _engine_errors():
        while fetched:
            yield [[convert(value) for convert, value in zip(converters, row)]
                   for row in fetched]
            fetched = cursor.fetchmany(chunk_rows)


def write(con, kql: str, writer, out,
          now: dt.datetime | None = None) -> int:
    """*writer*'s text (output.write_table, write_csv or write_json) of
    *kql*'s rows; the number written (past PYTHON_ROWS by _copy)."""
    if writer is output.write_table:
        return writer(stream(con, kql, now), out)
    with _engine_errors():
        _execute(con, kql, now, f'CREATE OR REPLACE TEMP TABLE {_RESULT} AS ')
        try:
            rows = con.execute(f'SELECT count(*) FROM {_RESULT}'
                               ).fetchall()[0][0]
            cursor = con.execute(f'SELECT * FROM {_RESULT}')
            if rows <= PYTHON_ROWS:
                return writer(_stream_of(cursor), out)
            _copy(con, cursor.description, writer is output.write_json, out)
            return rows
        finally:
            con.execute(f'DROP TABLE IF EXISTS {_RESULT}')


def _copy(con, described, as_json: bool, out) -> None:
    """The stored result, its values as output.write_csv or write_json
    writes them (ISO 8601 datetimes with Z; in CSV True/False, nothing for
    null or '', JSON for lists), by DuckDB's COPY, through a file."""
    cells = ', '.join(f'{_copied(name, str(kind).upper(), as_json)} AS '
                      f'"{name}"' for name, kind, *_ in described)
    form = '(FORMAT json, ARRAY true)' if as_json else \
        '(FORMAT csv, HEADER true)'
    with tempfile.TemporaryDirectory(dir=con.folder if con.folder.is_dir()
                                     else None) as scratch:
        path = os.path.join(scratch, 'result')
        con.execute(f'COPY (SELECT {cells} FROM {_RESULT}) TO '
                    f'{sql_string(path)} {form}')
        with open(path, encoding='utf-8', newline='') as written:
            shutil.copyfileobj(written, out)


def _copied(name: str, kind: str, as_json: bool) -> str:
    column = '"' + name.replace('"', '""') + '"'
    if kind.startswith('TIMESTAMP'):
        return (f"CASE WHEN strftime({column}, '%f') = '000000' "
                f"THEN strftime({column}, '%Y-%m-%dT%H:%M:%SZ') "
                f"ELSE strftime({column}, '%Y-%m-%dT%H:%M:%S.%fZ') END")
    if as_json:
        return column
    if kind == 'BOOLEAN':
        return f"CASE WHEN {column} THEN 'True' WHEN NOT {column} " \
               "THEN 'False' END"
    if kind == 'VARCHAR':
        return f"nullif({column}, '')"
    if _kusto_type(kind) == 'dynamic' or kind == 'JSON':
        return f'CAST(to_json({column}) AS VARCHAR)'
    return column


@contextlib.contextmanager
def _engine_errors():
    """DuckDB's and duckdb-kql's errors as a one-line QueryFailed."""
    try:
        yield
    except duckdb.OutOfMemoryException as err:
        limit = memory_limit()
        why = str(err).splitlines()[0]
        raise QueryFailed(
            f'{MEMORY_VARIABLE}={limit} is too little for this query '
            f'({why}): give it more, e.g. {MEMORY_VARIABLE}='
            f'{_more(limit)}, or narrow the query (--since)') from None
    except duckdb.Error as err:
        raise QueryFailed(str(err)) from None
    except Exception as err:
        kql = sys.modules.get('duckdb_kql')      # raised only once imported
        if kql is None or not isinstance(err, kql.KqlError):
            raise
        if not isinstance(err, kql.KqlUnsupportedError):
            raise QueryFailed(str(err)) from None
        # the construct in the query's own terms (duckdb-kql's hint names
        # its own source files: not the reader's business)
        kind, _, name = str(err.construct).rpartition(':')
        what = f'the {kind} {name}' if kind else repr(name)
        where = f' (at {err.span})' if err.span else ''
        raise QueryFailed(
            f'the local engine (duckdb-kql) cannot run {what}{where}. '
            'Rewrite that part, or run it in Log Analytics (--workspace).'
        ) from None


def _more(limit: str) -> str:
    """Twice *limit*, and at least the default, in MB."""
    have = memory_bytes(limit)
    return f'{max(2 * have, memory_bytes(DEFAULT_MEMORY)) // 1000 ** 2}MB'

