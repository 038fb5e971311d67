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


def read(con, table: str, columns: list[dict], files: list[str]) -> int:
    """Inserts the *columns* of every line of *files* into *table*, and
    returns how many of them could not be read as a row: they are rows of
    nulls (a null record_id), which the reader of *table* leaves out.
    Deleting them instead would leave gaps in the table's row numbers,
    which name its rows (local.py)."""
    before = _null_ids(con, table)
    con.execute(f'INSERT INTO "{table}" {_read_json(files, columns)}')
    return _null_ids(con, table) - before


def _null_ids(con, table: str) -> int:
    return con.execute(f'SELECT count(*) FROM "{table}" WHERE record_id IS '
                       'NULL').fetchall()[0][0]
