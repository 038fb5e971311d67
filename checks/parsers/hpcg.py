"""HPCG report: the official GFLOP/s rating of a VALID run.

Reads HPCG 3.1's ``HPCG-Benchmark_3.1_*.txt`` (``Section::Key=value``),
HPCG 3.0's ``HPCG-Benchmark-3.0_*.yaml`` (indented ``Key: value``; not valid
YAML, so it is read line-wise), NVIDIA HPCG's ``Final Summary::`` lines and
``grep`` output of those lines across several report files. HPCG writes
nothing to stdout, so the file to parse is the report, not the job output.
"""
from __future__ import annotations

import re

from .base import (Metric, ParseResult, failure, mpi_abort,
                   strip_rank_prefixes, success, to_float)

TOOL = 'hpcg'
UNIT = 'GFLOP/s'

_SEP = r'[ \t]*[=:][ \t]*'
# The prefix group keeps what precedes the line: a grep file name or nothing.
_VALID = re.compile(
    r'^(?P<prefix>.*?)(?:Final Summary::)?'
    r'HPCG result is VALID with a GFLOP/s rating of'
    + _SEP + r'(?P<value>\S+)', re.M)
_INVALID = re.compile(r'^.*HPCG result is' + _SEP + r'INVALID.*$', re.M)
_HISTORICAL = re.compile(
    r'HPCG 2\.4 (?:rating for historical reasons|Rating \(for historical '
    r'value\)) is' + _SEP + r'(\S+)')
# 3.1: "Section::Result=FAILED"; 3.0: "Section: \n  Result: FAILED". A
# section starts a line or follows a colon (grep's "file:"), so that each
# character is tried as part of one section only: linear time.
_FAILED_TEST = re.compile(
    r'(?:^|(?<=:))(?P<section>[^\n:]+)(?:::|:[ \t]*\n[ \t]*)Result' + _SEP
    + 'FAILED', re.M)
_LOG_FILE = re.compile(r'Call \[\d+\] (?:Number of Iterations|Scaled Residual)'
                       r'|Departure from symmetry \(scaled\)')
# Section names at the start of a line (after grep's "file:" if any): the
# word HPCG alone in foreign text must not make it an HPCG report.
_LOOKS_LIKE_HPCG = re.compile(
    r'^(?:[^\n:]*:)?[ \t]*(?:HPCG-Benchmark\b|HPCG result is\b|Final Summary:|'
    r'Benchmark Time Summary:|Machine Summary:)', re.M)

_NUMBERS = {
    'distributed_processes': r'Distributed Processes',
    'threads_per_process': r'Threads per processes',
    'global_nx': r'Global nx', 'global_ny': r'Global ny',
    'global_nz': r'Global nz',
    'local_nx': r'(?:^|::)[ \t]*nx', 'local_ny': r'(?:^|::)[ \t]*ny',
    'local_nz': r'(?:^|::)[ \t]*nz',
    'execution_time': r'(?:Results are valid but execution time \(sec\) is'
                      r'|Official results execution time \(sec\) is)',
    'official_min_time': r'Official results execution time \(sec\) must be '
                         r'at least',
    'raw_total_bw': r'Raw Total B/W',
}
_COUNTS = {'distributed_processes', 'threads_per_process', 'global_nx',
           'global_ny', 'global_nz', 'local_nx', 'local_ny', 'local_nz'}
_VERSION = re.compile(r'^(?:.*version' + _SEP + r')V?([\d.]+)[ \t]*$', re.M)


def _details(text: str) -> dict:
    details = {}
    version = _VERSION.search(text)
    if version:
        details['version'] = version.group(1)
    for name, label in _NUMBERS.items():
        match = re.search(label + _SEP + r'(\S+)', text, re.M)
        value = to_float(match.group(1)) if match else None
        if value is not None:
            details[name] = int(value) if name in _COUNTS else value
    historical = _HISTORICAL.search(text)
    if historical and to_float(historical.group(1)) is not None:
        details['rating_2_4'] = to_float(historical.group(1))
    if 'QuickPath option' in text:
        details['quickpath'] = True
    return details


def parse(text: str, expected_processes: int | None = None) -> ParseResult:
    """``expected_processes``: MPI ranks the job started."""
    text = strip_rank_prefixes(text or '')
    if not text.strip():
        return failure(TOOL, 'empty output: HPCG writes its results to its '
                             'report file (HPCG-Benchmark*.txt or .yaml), '
                             'not to stdout')
    if not _LOOKS_LIKE_HPCG.search(text):
        if _LOG_FILE.search(text):
            return failure(TOOL, "this is HPCG's log file (hpcg*.txt), not "
                                 'its report: parse HPCG-Benchmark*.txt/.yaml')
        return failure(TOOL, 'not hpcg output: no "HPCG result is" line '
                             'and no HPCG report sections')

    details = _details(text)
    ratings = [(m.group('prefix').rstrip(':').strip(),
                to_float(m.group('value'))) for m in _VALID.finditer(text)]
    ratings = [(source, value) for source, value in ratings
               if value is not None]
    metrics = {}
    if ratings:
        # Several reports (grep across nodes): the weakest one speaks for all.
        metrics['gflops'] = Metric(min(v for _, v in ratings), UNIT)
        if len(ratings) > 1:
            details['ratings'] = [{'source': s, 'gflops': v}
                                  for s, v in ratings]

    aborted = mpi_abort(text)
    if aborted:
        return failure(TOOL, f'MPI launcher abort: {aborted}', metrics,
                       details)
    invalid = _INVALID.search(text)
    failed = [m.group('section').strip() for m in _FAILED_TEST.finditer(text)]
    if invalid or failed:
        reason = 'HPCG result is INVALID'
        if failed:
            reason += ': FAILED ' + '; '.join(failed)
        return failure(TOOL, reason, metrics, details)
    if not ratings:
        return failure(TOOL, 'truncated report: no "HPCG result is VALID with '
                             'a GFLOP/s rating" line in the Final Summary',
                       metrics, details)
    ranks = details.get('distributed_processes')
    if expected_processes and ranks not in (None, expected_processes):
        return failure(TOOL, f'wrong task count: HPCG ran on {ranks} MPI '
                             'processes, the job started '
                             f'{expected_processes}', metrics, details)
    return success(TOOL, metrics, details)
