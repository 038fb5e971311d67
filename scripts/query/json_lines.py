"""The store's JSON lines read by DuckDB, one set of rules for the index
and for the files read at query time: each column with the type
bicep/results_schema.json declares; a line that is no row, a row of nulls,
counted by file and left out; a NaN or an infinity, null (as sync reads
it). ``fingerprint`` names rules and schema: bump RULES when a rule changes.
"""
from __future__ import annotations

import hashlib
import json

RULES = 3            # 3: one DuckDB index replaces the Parquet cache
# Kusto column type -> the DuckDB type that duckdb-kql reads back as it.
DUCKDB_TYPES = {'datetime': 'TIMESTAMPTZ', 'string': 'VARCHAR',
                'real': 'DOUBLE', 'int': 'INTEGER', 'long': 'BIGINT',
                'boolean': 'BOOLEAN', 'dynamic': 'JSON'}
FILE_COLUMN = '_file'    # the session file a row was read from


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def definitions(columns: list[dict]) -> str:
    """The columns as a CREATE TABLE lists them."""
    return ', '.join(f'"{c["name"]}" {DUCKDB_TYPES[c["type"]]}'
                     for c in columns)


def fingerprint(columns: list[dict]) -> str:
    """What rows read by these rules depend on besides their files."""
    key = json.dumps([RULES, [(c['name'], DUCKDB_TYPES[c['type']])
                              for c in columns]])
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def _finite(column: dict) -> str:
    name = column['name']
    if column['type'] != 'real':
        return f'"{name}"'
    return f'CASE WHEN isfinite("{name}") THEN "{name}" END AS "{name}"'


def select(files: list[str], columns: list[dict]) -> str:
    """SQL of the *columns* of every line of *files*, and the file each
    came from (FILE_COLUMN). An unreadable line (a torn last line of a
    session killed while writing) reads as a row of nulls with its file:
    every real row has a record_id. hive_partitioning: DuckDB otherwise
    takes a folder named key=value as a column, over the file's own
    (https://duckdb.org/docs/stable/data/partitioning/hive_partitioning)."""
    declared = ', '.join(f'{sql_string(c["name"])}: '
                         f'{sql_string(DUCKDB_TYPES[c["type"]])}'
                         for c in columns)
    listed = ', '.join(map(sql_string, files))
    return (f'SELECT {", ".join(_finite(c) for c in columns)}, filename AS '
            f'"{FILE_COLUMN}" FROM read_json([{listed}], '
            f"columns={{{declared}}}, format='newline_delimited', "
            'ignore_errors=true, filename=true, hive_partitioning=false)')


def unreadable_by_file(con, table: str, files: list[str]) -> dict[str, int]:
    """The unreadable lines of *table* (rows of nulls) per file, among
    those of *files* (every one counted, 0 included)."""
    counted = dict.fromkeys(files, 0)
    if files:
        counted.update(con.execute(
            f'SELECT "{FILE_COLUMN}", count(*) FROM {table} WHERE record_id '
            f'IS NULL AND "{FILE_COLUMN}" IN (SELECT unnest(?)) GROUP BY 1',
            [files]).fetchall())
    return counted
