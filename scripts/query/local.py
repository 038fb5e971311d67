"""Run KQL on the login node, with no Azure: DuckDB reads the local store's
JSON lines into a table shaped like ReFrameResults_CL (the columns of
bicep/results_schema.json), and duckdb-kql translates the query."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import duckdb_kql

from config.results import records, store
from scripts.query.result import QueryFailed, Result, plain

# Kusto column type -> the DuckDB type that duckdb-kql reads back as it.
_DUCKDB_TYPES = {'datetime': 'TIMESTAMPTZ', 'string': 'VARCHAR',
                 'real': 'DOUBLE', 'int': 'INTEGER', 'long': 'BIGINT',
                 'boolean': 'BOOLEAN', 'dynamic': 'JSON'}
_UNREAD = 'clusterproof_stored_lines'
_KUSTO_TYPES = {'DOUBLE': 'real', 'FLOAT': 'real', 'BIGINT': 'long',
                'INTEGER': 'int', 'HUGEINT': 'long', 'VARCHAR': 'string',
                'BOOLEAN': 'bool', 'JSON': 'dynamic', 'DATE': 'datetime'}


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(results_dir: Path | None = None):
    """A DuckDB connection with the store's rows as ReFrameResults_CL."""
    schema = records.schema()
    con = duckdb_kql.connect()
    columns = ', '.join(f'{_sql_string(c["name"])}: '
                        f'{_sql_string(_DUCKDB_TYPES[c["type"]])}'
                        for c in schema['columns'])
    base = results_dir or store.results_dir()
    files = [str(path) for path in store.session_files(base)]
    table = schema['table']
    if not files:
        definitions = ', '.join(f'"{c["name"]}" {_DUCKDB_TYPES[c["type"]]}'
                                for c in schema['columns'])
        con.execute(f'CREATE TABLE "{table}" ({definitions})')
        return con
    file_list = '[' + ', '.join(_sql_string(f) for f in files) + ']'
    # An unreadable line (a torn last line of a session still writing, or
    # killed) reads as a row of nulls; every real row has a record_id.
    con.execute(
        f'CREATE TABLE {_UNREAD} AS SELECT * FROM read_json({file_list}, '
        f"columns={{{columns}}}, format='newline_delimited', "
        'ignore_errors=true)')
    con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM {_UNREAD} '
                'WHERE record_id IS NOT NULL')
    _nonfinite_as_null(con, table, schema)
    return con


def _nonfinite_as_null(con, table, schema):
    """A NaN or an infinity found in a file reads as null, as it would
    have been stored (store.parse_line does the same for sync)."""
    for column in schema['columns']:
        if column['type'] == 'real':
            name = column['name']
            con.execute(f'UPDATE "{table}" SET "{name}" = NULL '
                        f'WHERE NOT isfinite("{name}")')


def unreadable_lines(con) -> int:
    """How many stored lines could not be read as a row."""
    try:
        return con.execute(f'SELECT count(*) FROM {_UNREAD} '
                           'WHERE record_id IS NULL').fetchone()[0]
    except duckdb.CatalogException:       # an empty store
        return 0


def _kusto_type(duckdb_type) -> str:
    name = str(duckdb_type).upper()
    if name.startswith('TIMESTAMP'):
        return 'datetime'
    if name.endswith('[]') or name.startswith(('STRUCT', 'MAP')):
        return 'dynamic'
    return _KUSTO_TYPES.get(name, 'string')


def run(con, kql: str, now: dt.datetime | None = None) -> Result:
    """Run *kql*; an unsupported construct raises UnsupportedQuery naming
    it."""
    try:
        relation = duckdb_kql.kql(con, kql, query_now=now)
        fetched = relation.fetchall()
    except duckdb_kql.KqlUnsupportedError as err:
        raise UnsupportedQuery(
            f'the local engine (duckdb-kql) cannot run this query: {err}. '
            'Rewrite that part, or run it in Log Analytics '
            '(--workspace).') from None
    except (duckdb_kql.KqlError, duckdb.Error) as err:
        raise InvalidQuery(str(err)) from None
    types = [_kusto_type(t) for t in relation.types]
    rows = [[plain(value, kind) for value, kind in zip(row, types)]
            for row in fetched]
    return Result(list(relation.columns), types, rows)


class UnsupportedQuery(QueryFailed):
    """Valid KQL that the local engine cannot run (Log Analytics can)."""


class InvalidQuery(QueryFailed):
    """KQL with a syntax error or an unknown name."""
