"""How much memory DuckDB may hold for a query, how many threads share it,
and where it spills beyond it."""
from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from scripts.query.json_lines import sql_string
from scripts.query.result import QueryFailed

MEMORY_VARIABLE = 'CLUSTERPROOF_QUERY_MEMORY'
DEFAULT_MEMORY = '640MB'
THREAD_MEMORY = 320 * 1000 ** 2


def memory_limit() -> str:
    """DuckDB's memory limit for a query (CLUSTERPROOF_QUERY_MEMORY, e.g.
    2GB; default 640MB): beyond it joins and aggregations spill to disk."""
    return os.environ.get(MEMORY_VARIABLE) or DEFAULT_MEMORY


def spill_directory(folder: Path) -> Path:
    return folder / 'spill'


def configure(con, folder: Path) -> None:
    """The memory limit (one DuckDB refuses: its error, naming the
    variable); spills in the cache folder, made here (DuckDB makes the
    spill directory, not its parent), never the current directory; one
    thread per THREAD_MEMORY of the limit."""
    limit = memory_limit()
    try:
        con.execute(f'SET memory_limit = {sql_string(limit)}')
    except duckdb.Error as err:
        raise QueryFailed(f'{MEMORY_VARIABLE}={limit}: {err}') from None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass                         # nothing can spill: said if needed
    con.execute('SET temp_directory = '
                f'{sql_string(str(spill_directory(folder)))}')
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
    holds hash tables and sort runs of its own. DuckDB's guide: "Aim for
    1-4 GB memory per thread", 125 MB at the least
    (https://duckdb.org/docs/2.0/guides/performance/environment)."""
    return max(1, min(cores, limit // THREAD_MEMORY))
