"""The store's JSON lines as a DuckDB table, by the local engine's load
rules: every column with the type bicep/results_schema.json declares for it
(through DUCKDB_TYPES); a line that cannot be read as a row is left out and
counted; a NaN or an infinity reads as null, as it would have been stored
(store.parse_line does the same for sync).

``fingerprint`` names these rules and the schema for the Parquet cache
(parquet_cache.py): bump RULES when a rule here changes, and every cached
entry is read from its JSON lines again.
"""
from __future__ import annotations

import hashlib
import json
import os

from config.results import batching

RULES = 2            # 2: folders named key=value are not read as columns
# Kusto column type -> the DuckDB type that duckdb-kql reads back as it.
DUCKDB_TYPES = {'datetime': 'TIMESTAMPTZ', 'string': 'VARCHAR',
                'real': 'DOUBLE', 'int': 'INTEGER', 'long': 'BIGINT',
                'boolean': 'BOOLEAN', 'dynamic': 'JSON'}


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sql_list(texts) -> str:
    return '[' + ', '.join(sql_string(t) for t in texts) + ']'


def definitions(columns: list[dict]) -> str:
    """The columns as a CREATE TABLE lists them."""
    return ', '.join(f'"{c["name"]}" {DUCKDB_TYPES[c["type"]]}'
                     for c in columns)


def names(columns: list[dict]) -> str:
    return ', '.join(f'"{c["name"]}"' for c in columns)


def fingerprint(columns: list[dict]) -> str:
    """What a table read by these rules depends on besides its file."""
    key = json.dumps([RULES, [(c['name'], DUCKDB_TYPES[c['type']])
                              for c in columns]])
    return hashlib.sha256(key.encode()).hexdigest()


def _finite(column: dict) -> str:
    name = column['name']
    if column['type'] != 'real':
        return f'"{name}"'
    return f'CASE WHEN isfinite("{name}") THEN "{name}" END AS "{name}"'


def _read_json(files: list[str], columns: list[dict]) -> str:
    """SQL of the *columns* of every row of *files*, by the rules above."""
    declared = ', '.join(f'{sql_string(c["name"])}: '
                         f'{sql_string(DUCKDB_TYPES[c["type"]])}'
                         for c in columns)
    # An unreadable line (a torn last line of a session still writing, or
    # killed) reads as a row of nulls; every real row has a record_id.
    # hive_partitioning: DuckDB otherwise takes a folder of the path named
    # key=value as a column key, over the file's own (https://duckdb.org/
    # docs/stable/data/partitioning/hive_partitioning).
    return (f'SELECT {", ".join(_finite(c) for c in columns)} FROM '
            f'read_json({sql_list(files)}, columns={{{declared}}}, '
            "format='newline_delimited', ignore_errors=true, "
            'hive_partitioning=false)')


def write_parquet(con, columns: list[dict], path: str, target: str) -> int:
    """Writes the *columns* of every row of the JSON lines *path* as the
    Parquet file *target* in one pass; returns how many of its lines could
    not be read as a row (left out: written again without them, which only
    a damaged file needs)."""
    con.execute(f'COPY ({_read_json([path], columns)}) TO '
                f'{sql_string(target)} (FORMAT parquet)')
    lost = con.execute(f'SELECT count(*) FROM read_parquet('
                       f'{sql_string(target)}, hive_partitioning=false) '
                       'WHERE record_id IS NULL').fetchall()[0][0]
    if lost:
        whole = f'{target}.whole'
        os.replace(target, whole)
        try:
            con.execute(f'COPY (SELECT * FROM read_parquet('
                        f'{sql_string(whole)}, hive_partitioning=false) '
                        f'WHERE record_id IS NOT NULL) TO '
                        f'{sql_string(target)} (FORMAT parquet)')
        finally:
            os.unlink(whole)
    return lost


def create(con, database: str, table: str, columns: list[dict]) -> str:
    """Creates *table*, for the *columns* of JSON lines, in an in-memory
    database of its own attached with COMPRESS, and returns its name as
    SQL. DuckDB compresses such a table when the database is checkpointed
    (https://duckdb.org/docs/stable/sql/statements/checkpoint, "In-memory
    tables also support compression"): the report's 39 columns of 1M rows
    held 485 MiB as inserted and 42 MiB once checkpointed."""
    con.execute(f"ATTACH ':memory:' AS \"{database}\" (COMPRESS)")
    name = f'"{database}"."{table}"'
    con.execute(f'CREATE TABLE {name} ({definitions(columns)})')
    return name


def read(con, table: str, columns: list[dict], files: list[str],
         batch_bytes: int) -> int:
    """Inserts the *columns* of every line of *files* into *table* (made by
    create()), at most *batch_bytes* of them per statement, the rows before
    compressed before the next batch is read (compressing the last would
    cost more than it saves), so that the rows held as inserted stay below
    what one batch makes; returns how many lines could not be
    read as a row: they are rows of nulls (a null record_id), which the
    reader of *table* leaves out. Deleting them instead would leave gaps in
    the table's row numbers, which name its rows (local.py). The rows go in
    no set order (preserve_insertion_order off): in order, DuckDB inserts
    with one thread once memory runs short (11 s instead of 5.5 s at 1M
    rows and 640MB)."""
    database = table.split('.', 1)[0]
    before = _null_ids(con, table)
    for number, batch in enumerate(_batches(files, batch_bytes)):
        if number:
            con.execute(f'CHECKPOINT {database}')
        con.execute('SET preserve_insertion_order = false')
        try:
            con.execute(f'INSERT INTO {table} {_read_json(batch, columns)}')
        finally:
            con.execute('RESET preserve_insertion_order')
    return _null_ids(con, table) - before


def _batches(files: list[str], most: int):
    """*files* in runs of at most *most* bytes (a larger file alone)."""
    return batching.runs_under(files, most, _size)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0                      # gone: the read says so


def _null_ids(con, table: str) -> int:
    return con.execute(f'SELECT count(*) FROM {table} WHERE record_id IS '
                       'NULL').fetchall()[0][0]
