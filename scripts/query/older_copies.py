"""The copies of records stored more than once that results.kql's
``arg_max(TimeGenerated, *) by record_id`` would not keep (at-least-once
delivery can store a record twice), as a table of (_src, _pos): the row's
file and place in it, which local.py leaves out with an anti join.

Finding them is a pass over every record_id read (0.25 s of CPU at 1M
rows, 60 ms for a 7-day window), paid by every command. When every row
read comes from Parquet files of the cache (entries and packs, whose names
stand for their content: parquet_cache.py), the answer depends on nothing
but which files they are, so it is kept, in the cache's ``older-copies/``
folder as ``older-<key>.parquet``, the key naming the files; the KEPT most
recently used are kept. Rows read from JSON lines (a session still
writing) are looked at each time.
"""
from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import duckdb

from scripts.query import json_lines, parquet_cache

KEPT = 64
_KEPT_NAME = re.compile(r'^older-[0-9a-f]{24}\.parquet$')


def find(con, rows: str, table: str, parquet_files: list[str],
         from_lines: int, cache: parquet_cache.Cache) -> int:
    """Creates *table* with the older copies among the view *rows* and
    returns how many there are (none: no table). *parquet_files* are the
    files the view reads; *from_lines*, how many of its rows are in the
    table read from JSON lines."""
    kept = None
    if not from_lines and parquet_files:
        kept = kept_path(cache, parquet_files)
        found = _read(con, table, kept)
        if found is not None:
            return found
    found = _find(con, rows, table)
    if kept is not None and cache.writable:
        _keep(con, table if found else None, kept, cache)
    return found


def directory(cache: parquet_cache.Cache) -> Path:
    return cache.where.parent / 'older-copies'


def kept_path(cache: parquet_cache.Cache, parquet_files: list[str]) -> Path:
    """Where the answer for these files is kept: named by them, in any
    order, and by each one's size, mtime and inode. The answer names rows by
    their place in a file, and a file written again under its name (a
    damaged pack rebuilt: packs are written in no set row order) may hold
    them elsewhere."""
    return directory(cache) / ('older-' + parquet_cache.key('\n'.join(
        sorted(f'{path} {_identity(path)}' for path in parquet_files)),
        24) + '.parquet')


def _identity(path: str) -> str:
    try:
        found = os.stat(path)
    except OSError:
        return ''                    # gone: its load fails on its own
    return f'{found.st_size} {found.st_mtime_ns} {found.st_ino}'



def _find(con, rows: str, table: str) -> int:
    repeated = f'{table}_ids'
    con.execute(f'CREATE TEMP TABLE "{repeated}" AS SELECT record_id FROM '
                f'"{rows}" GROUP BY record_id HAVING count(*) > 1')
    try:
        if not con.execute(f'SELECT count(*) FROM "{repeated}"'
                           ).fetchall()[0][0]:
            return 0
        con.execute(
            f'CREATE TABLE "{table}" AS SELECT _src, _pos FROM (SELECT '
            '_src, _pos, row_number() OVER (PARTITION BY record_id ORDER BY '
            f'TimeGenerated DESC) AS copy FROM "{rows}" WHERE record_id IN '
            f'(SELECT record_id FROM "{repeated}")) WHERE copy > 1')
    finally:
        con.execute(f'DROP TABLE "{repeated}"')
    return _count(con, table)


def _count(con, table: str) -> int:
    return con.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0][0]


def _read(con, table: str, kept: Path) -> int | None:
    """The older copies kept in *kept* as *table*; None when there is no
    such file or it cannot be read (found again, and kept again)."""
    if not kept.exists():
        return None
    try:
        con.execute(f'CREATE TABLE "{table}" AS SELECT _src, _pos FROM '
                    f'read_parquet({json_lines.sql_string(str(kept))})')
    except duckdb.Error:
        con.execute(f'DROP TABLE IF EXISTS "{table}"')
        parquet_cache.remove(kept)
        return None
    try:
        os.utime(kept)               # used: the last to be pruned
    except OSError:
        pass
    found = _count(con, table)
    if not found:
        con.execute(f'DROP TABLE "{table}"')
    return found


def _keep(con, table: str | None, kept: Path,
          cache: parquet_cache.Cache) -> None:
    """Writes the older copies (*table*, or none) to *kept*, then prunes
    all but the KEPT most recently used."""
    source = (f'SELECT _src, _pos FROM "{table}"' if table else
              "SELECT ''::VARCHAR AS _src, 0::BIGINT AS _pos WHERE false")
    partial = kept.with_name(f'.{kept.name}.{uuid.uuid4().hex}.partial')
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        con.execute(f'COPY ({source}) TO '
                    f'{json_lines.sql_string(str(partial))} (FORMAT parquet)')
        os.replace(partial, kept)
    except (OSError, duckdb.Error) as err:
        cache.cannot_write(err)
        parquet_cache.remove(partial)
        return
    _prune(kept.parent)


def _prune(where: Path) -> None:
    found = []
    try:
        with os.scandir(where) as listing:
            for item in listing:
                if _KEPT_NAME.match(item.name):
                    try:
                        found.append((item.stat().st_mtime, item.path))
                    except OSError:      # pruned by another command
                        continue
    except OSError:
        return
    for _, path in sorted(found, reverse=True)[KEPT:]:
        parquet_cache.remove(Path(path))
