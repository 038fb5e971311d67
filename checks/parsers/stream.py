"""STREAM (McCalpin) output: best rate of the four kernels, in MB/s.

Tolerates the C 5.10 layout, the MPI 1.8 layout (narrower rate column,
"Total Aggregate" lines) and the Fortran 5.6 layout ("Rate (MB/s)" header,
"Solution Validates!"). The run only counts when STREAM validated its own
arrays and each kernel took long enough for the timer to measure it.
"""
from __future__ import annotations

import re

from .base import (Metric, ParseResult, failure, mpi_abort,
                   strip_rank_prefixes, success, to_float)

TOOL = 'stream'

KERNELS = ('Copy', 'Scale', 'Add', 'Triad')
METRIC_OF = {'Copy': 'copy_bw', 'Scale': 'scale_bw', 'Add': 'add_bw',
             'Triad': 'triad_bw'}
UNIT = 'MB/s'

# STREAM's own guidance: "you are not getting at least 20 clock ticks per
# test" means the arrays sit in cache and the rates are not memory rates.
MIN_CLOCK_TICKS = 20

_HEADER = re.compile(r'^[ \t]*Function[ \t]+(Best Rate MB/s|Rate \(MB/s\))', re.M)
_KERNEL_ROW = re.compile(
    r'^[ \t]*(Copy|Scale|Add|Triad):[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)[ \t]*$',
    re.M)
_VALIDATES = re.compile(r'Solution Validates', re.I)
_FAILED_VALIDATION = re.compile(r'^.*Failed Validation.*$', re.M | re.I)
_TICKS = re.compile(r'\(=\s*(\d+)\s+(?:clock|timer) ticks\)')
_INT_FIELDS = {
    'array_size': re.compile(r'^[ \t]*Array size[ \t]*=[ \t]*(\d+)', re.M),
    'total_array_size': re.compile(
        r'^[ \t]*Total Aggregate Array size[ \t]*=[ \t]*(\d+)', re.M),
    'bytes_per_element': re.compile(r'uses (\d+) bytes per array element'),
    'array_size_per_rank': re.compile(
        r'Array size per MPI rank\s*=\s*(\d+)'),
    'mpi_ranks': re.compile(r'distributed across (\d+) MPI ranks'),
    # NTIMES, the build's repetition count
    'ntimes': re.compile(r'Each kernel will be executed (\d+) times'),
    'threads_requested': re.compile(
        r'Number of Threads requested(?: for each MPI rank)?\s*=\s*(\d+)'),
    'threads_counted': re.compile(
        r'Number of Threads(?: counted(?: for rank 0)?)?\s*=\s*(\d+)'),
}
_VERSION = re.compile(r'STREAM [Vv]ersion \$Revision:\s*([\d.]+)')


# HPC Challenge embeds HPL and STREAM (in GB/s) in its own report.
_HPCC = re.compile(r'HPC Challenge Benchmark|Begin of \w*STREAM section')


def _details(text: str) -> dict:
    details = {}
    version = _VERSION.search(text)
    if version:
        details['version'] = version.group(1)
    for name, pattern in _INT_FIELDS.items():
        match = pattern.search(text)
        if match:
            details[name] = int(match.group(1))
    ticks = _TICKS.search(text)
    if ticks:
        details['clock_ticks_per_test'] = int(ticks.group(1))
    return details


def _kernel_rows(text: str) -> tuple[dict[str, dict], list[str]]:
    """Rows with numbers, and the kernels whose rate is not a number
    (Fortran STREAM prints "Infinity" when the timer saw no time pass)."""
    rows, unmeasured = {}, []
    for match in _KERNEL_ROW.finditer(text):
        values = [to_float(token) for token in match.groups()[1:]]
        if None in values:
            unmeasured.append(match.group(1))
            continue
        rate, avg, low, high = values
        rows[match.group(1)] = {'best_rate': rate, 'avg_time': avg,
                                'min_time': low, 'max_time': high}
    return rows, unmeasured


def parse(text: str, expected_threads: int | None = None,
          min_array_elements: int | None = None,
          expected_ranks: int | None = None) -> ParseResult:
    """``expected_threads``: OpenMP threads the run must show (per rank).
    ``min_array_elements``: smallest array that dwarfs the node's caches.
    ``expected_ranks``: MPI ranks an MPI STREAM run must report."""
    text = strip_rank_prefixes(text or '')
    if not text.strip():
        return failure(TOOL, 'empty output: STREAM printed nothing')
    if _HPCC.search(text):
        return failure(TOOL, 'not stream output: this is an HPC Challenge '
                             '(hpcc) report; parse it as hpcc')
    if not _HEADER.search(text) and 'STREAM' not in text:
        return failure(TOOL, 'not stream output: no "STREAM version" '
                             'banner and no "Function ... Rate" table')

    details = _details(text)
    rows, unmeasured = _kernel_rows(text)
    details['kernels'] = rows
    metrics = {METRIC_OF[k]: Metric(rows[k]['best_rate'], UNIT)
               for k in KERNELS if k in rows}

    aborted = mpi_abort(text)
    if aborted:
        return failure(TOOL, f'MPI launcher abort: {aborted}', metrics,
                       details)
    if unmeasured:
        return failure(TOOL, 'no rate for ' + ', '.join(unmeasured)
                             + ': the kernels ran faster than the timer '
                             '(array far too small)', metrics, details)
    missing = [k for k in KERNELS if k not in rows]
    if missing:
        return failure(TOOL, 'truncated output: no result row for '
                             + ', '.join(missing), metrics, details)
    failed = _FAILED_VALIDATION.search(text)
    if failed:
        return failure(TOOL, 'STREAM validation failed: '
                             + failed.group(0).strip(), metrics, details)
    if not _VALIDATES.search(text):
        return failure(TOOL, 'truncated output: no "Solution Validates" '
                             'line after the result table', metrics, details)
    ticks = details.get('clock_ticks_per_test')
    if ticks is not None and ticks < MIN_CLOCK_TICKS:
        return failure(
            TOOL, f'array too small: each kernel takes {ticks} clock ticks, '
                  f'STREAM asks for at least {MIN_CLOCK_TICKS}; the rates '
                  'are cache rates (rebuild with a larger STREAM_ARRAY_SIZE)',
            metrics, details)
    problem = _setup_problem(details, expected_threads, min_array_elements,
                             expected_ranks)
    if problem:
        return failure(TOOL, problem, metrics, details)
    return success(TOOL, metrics, details)


def _setup_problem(details: dict, expected_threads: int | None,
                   min_array_elements: int | None,
                   expected_ranks: int | None) -> str | None:
    ranks = details.get('mpi_ranks')
    if expected_ranks and ranks is not None and ranks != expected_ranks:
        return (f'wrong task count: STREAM ran on {ranks} MPI ranks, the '
                f'job started {expected_ranks}')
    counted = details.get('threads_counted')
    if expected_threads and counted not in (None, expected_threads):
        return (f'wrong thread count: STREAM counted {counted} OpenMP '
                f'threads, the test asked for {expected_threads}')
    # MPI STREAM spreads the aggregate array over the ranks: the total is
    # what has to dwarf the caches of all the nodes.
    size = details.get('total_array_size', details.get('array_size'))
    if min_array_elements and size is not None and size < min_array_elements:
        return (f'array too small for this node: {size} elements per array, '
                f'at least {min_array_elements} needed to dwarf the '
                'last-level cache (rebuild with -DSTREAM_ARRAY_SIZE='
                f'{min_array_elements})')
    return None
