"""How much memory DuckDB may hold for a query, how many threads share it,
and where it spills beyond it."""
from __future__ import annotations

import contextlib
import os
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


def configure(con, folder: Path) -> None:
    """The memory limit (one DuckDB refuses: its error, naming the
    variable); spills in folder/spill, the folder made here (DuckDB makes
    the spill directory, not its parent); threads by threads_for."""
    limit = memory_limit()
    try:
        con.execute(f'SET memory_limit = {sql_string(limit)}')
    except duckdb.Error as err:
        raise QueryFailed(f'{MEMORY_VARIABLE}={limit}: {err}') from None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass                         # nothing can spill: said if needed
    con.execute(f"SET temp_directory = {sql_string(str(folder / 'spill'))}")
    cores = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    threads = threads_for(memory_bytes(limit, con), cores)
    con.execute(f'SET threads = {threads}')


def memory_bytes(limit: str, con=None) -> int:
    """The bytes of a size such as 640MB, 4G or 1GiB (MB is 1000^2 bytes,
    MiB 2^20) by DuckDB's parse_formatted_bytes, asked on *con* (a DuckDB
    of its own costs ~20 ms of CPU; duckdb's default one, never closed,
    added 35-60 MB to a cold query's peak); what the setting takes but it
    does not (a percentage, none) says what to give."""
    try:
        with contextlib.nullcontext(con) if con else duckdb.connect() as on:
            return on.execute('SELECT parse_formatted_bytes(?)',
                              [limit]).fetchall()[0][0]
    except duckdb.Error:
        raise QueryFailed(
            f'{MEMORY_VARIABLE}={limit}: give a number and a unit, e.g. '
            '640MB, 2GB or 1GiB (KB, MB, GB, TB are 1000^i bytes; KiB, '
            'MiB, GiB, TiB 1024^i)') from None


def threads_for(limit: int, cores: int) -> int:
    """One thread per THREAD_MEMORY of *limit* bytes (two at 640MB), at
    least one, at most *cores*: each holds hash tables and sort runs of its
    own. DuckDB's guide: "Aim for 1-4 GB memory per thread", 125 MB at the
    least (https://duckdb.org/docs/2.0/guides/performance/environment)."""
    return max(1, min(cores, limit // THREAD_MEMORY))
