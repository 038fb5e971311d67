"""HPL output (netlib 2.x, Intel MKL, AMD BLIS builds, NVIDIA HPL).

Every result row is kept with the residual check that follows it. The
headline ``gflops`` is the best row; the run passes only when every row has
a PASSED residual and, for a whole output (one that starts with HPL's
parameter header), HPL's closing summary is there: it is what tells a
finished run from one killed half-way.
"""
from __future__ import annotations

import re

from .base import (Metric, ParseResult, failure, mpi_abort,
                   strip_rank_prefixes, success, to_float)

TOOL = 'hpl'
UNIT = 'Gflops'

# T/V encodes wall time (W), row/column-major mapping, look-ahead depth,
# broadcast, then the recursive and panel factorisation variants, e.g.
# WR11C2R4 or WC03R2R2.
# NVIDIA HPL appends "( per GPU)" to the Gflops column.
_ROW = re.compile(
    r'^[ \t]*(W[RC]\w{6})[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+)[ \t]+'
    r'(\S+)[ \t]+(\S+)(?:[ \t]+\([ \t]*(\S+)[ \t]*\))?[ \t]*$', re.M)
_RESIDUAL = re.compile(
    r'^[ \t]*\|\|Ax-b\|\|_oo/\(eps\*.*?=[ \t]*(\S+)[ \t]+\.+[ \t]+'
    r'(PASSED|FAILED)[ \t]*$',
    re.M)
_SUMMARY = re.compile(
    r'Finished\s+(\d+)\s+tests with the following results:'
    r'(?P<body>(?:[ \t]*\n[ \t]*\d+[ \t]+tests[^\n]*)*)')
_SUMMARY_COUNT = re.compile(r'(\d+)\s+tests\s+(completed and passed|'
                            r'completed and failed|skipped|'
                            r'completed without checking)')
_ERROR = re.compile(r'^.*HPL ERROR.*$|^.*>>>.*<<<.*$', re.M)
_BANNER = re.compile(r'HPLinpack|T/V[ \t]+N[ \t]+NB[ \t]+P[ \t]+Q|HPL-NVIDIA|Prog=')
_HEADER = re.compile(
    r'HPLinpack \d|The following parameter values will be used')
_THRESHOLD = re.compile(r'scaled residuals are less than\s+(\S+)')
# HPC Challenge embeds HPL and STREAM (in GB/s) in its own report.
_HPCC = re.compile(r'HPC Challenge Benchmark|Begin of \w*STREAM section')


def _rows(text: str) -> list[dict]:
    """Result rows in order, each with the residual line that follows."""
    events = [(m.start(), 'row', m) for m in _ROW.finditer(text)]
    events += [(m.start(), 'residual', m) for m in _RESIDUAL.finditer(text)]
    rows = []
    for _, kind, match in sorted(events, key=lambda e: e[0]):
        if kind == 'row':
            tv, n, nb, p, q, time, gflops, per_gpu = match.groups()
            row = {'tv': tv, 'n': int(n), 'nb': int(nb), 'p': int(p),
                   'q': int(q), 'time': to_float(time),
                   'gflops': to_float(gflops), 'residual': None,
                   'verdict': None}
            if per_gpu is not None:
                row['gflops_per_gpu'] = to_float(per_gpu)
            rows.append(row)
        elif rows and rows[-1]['verdict'] is None:
            rows[-1]['residual'] = to_float(match.group(1))
            rows[-1]['verdict'] = match.group(2)
    return rows


def _summary(text: str) -> dict | None:
    match = _SUMMARY.search(text)
    if not match:
        return None
    counts = {'finished': int(match.group(1))}
    names = {'completed and passed': 'passed',
             'completed and failed': 'failed',
             'skipped': 'skipped', 'completed without checking': 'unchecked'}
    for count, what in _SUMMARY_COUNT.findall(match.group('body')):
        counts[names[what]] = int(count)
    return counts


def _describe(row: dict) -> str:
    return f"{row['tv']} N={row['n']} NB={row['nb']} P={row['p']} Q={row['q']}"


def _verdict_problem(rows: list[dict], summary: dict | None,
                     has_header: bool) -> str | None:
    failed = [r for r in rows if r['verdict'] == 'FAILED']
    if failed:
        return (f'residual check FAILED for {len(failed)} of {len(rows)} '
                f'tests (first: {_describe(failed[0])}, residual '
                f"{failed[0]['residual']})")
    if summary and summary.get('failed'):
        return (f"HPL reports {summary['failed']} tests that failed the "
                'residual check')
    unchecked = [r for r in rows if r['verdict'] is None]
    if unchecked:
        return (f'no residual check after {_describe(unchecked[0])} '
                '(output truncated?)')
    if summary is None and has_header:
        return ('truncated output: no "Finished ... tests" summary after the '
                'last result')
    if summary and summary.get('skipped'):
        return (f"HPL skipped {summary['skipped']} tests because of illegal "
                'input values (HPL.dat grid larger than the MPI task count?)')
    if summary and summary['finished'] != len(rows):
        return (f"HPL says it finished {summary['finished']} tests but "
                f'{len(rows)} result rows were found (garbled output?)')
    return None


def _grid_problem(rows: list[dict], tasks: int) -> str | None:
    for row in rows:
        if row['p'] * row['q'] != tasks:
            return (f"wrong task count: {_describe(row)} uses "
                    f"{row['p'] * row['q']} processes, the job started "
                    f'{tasks} MPI tasks')
    return None


def parse(text: str, expected_tasks: int | None = None) -> ParseResult:
    """``expected_tasks``: MPI ranks the job started; every row's P x Q
    must use them all."""
    text = strip_rank_prefixes(text or '')
    if not text.strip():
        return failure(TOOL, 'empty output: HPL printed nothing')
    if _HPCC.search(text):
        return failure(TOOL, 'not hpl output: this is an HPC Challenge '
                             '(hpcc) report; parse it as hpcc')
    rows = _rows(text)
    if not rows and not _BANNER.search(text):
        return failure(TOOL, 'not hpl output: no "HPLinpack" banner and '
                             'no "T/V N NB P Q" result table')

    summary = _summary(text)
    details = {'rows': rows}
    if summary:
        details['summary'] = summary
    threshold = _THRESHOLD.search(text)
    if threshold and to_float(threshold.group(1)) is not None:
        details['threshold'] = to_float(threshold.group(1))
    rated = [r for r in rows if r['gflops'] is not None]
    metrics = {}
    if rated:
        best = max(rated, key=lambda r: r['gflops'])
        metrics['gflops'] = Metric(best['gflops'], UNIT)
        for key in ('n', 'nb', 'p', 'q', 'time'):
            details[f'best_{key}'] = best[key]

    aborted = mpi_abort(text)
    if aborted:
        return failure(TOOL, f'MPI launcher abort: {aborted}', metrics,
                       details)
    if not rows:
        error = _ERROR.search(text)
        if error:
            return failure(TOOL, 'HPL error: ' + error.group(0).strip(),
                           metrics, details)
        return failure(TOOL, 'truncated output: HPL started but printed no '
                             'result row', metrics, details)
    # HPL prints its parameter header first, so a file without it is an
    # excerpt someone cut by hand: its rows stand on their own residuals.
    has_header = bool(_HEADER.search(text))
    if not has_header and summary is None:
        details['excerpt'] = True
    problem = _verdict_problem(rows, summary, has_header)
    if not problem and expected_tasks:
        problem = _grid_problem(rows, expected_tasks)
    if problem:
        return failure(TOOL, problem, metrics, details)
    return success(TOOL, metrics, details)
