"""nccl-tests / rccl-tests output (all_reduce_perf, all_gather_perf, ...).

Metrics (GB/s are nccl-tests' 1e9 bytes/s; times in µs):
- ``avg_busbw``: the ``# Avg bus bandwidth`` footer line;
- ``busbw`` / ``algbw``: out-of-place, at the largest message size;
- ``busbw_inplace``: in-place at the largest size (absent when printed N/A);
- ``latency_small``: out-of-place time at the smallest non-zero size.

The table is read through its own column header, so the old layout (an
``error`` column, no ``redop``/``root``) and the current one (``#wrong``)
both parse. Launcher prefixes (``[1,0]<stdout>:``, srun's ``0: ``) and
NCCL/UCX log lines mixed into the output are ignored.
"""
from __future__ import annotations

import re

from .base import (Metric, ParseResult, failure, mpi_abort,
                   strip_rank_prefixes, success, to_float)

TOOL = 'nccl'

_HEADER = re.compile(r'^#?[ \t]*size[ \t]+count[ \t]+type\b.*$', re.M)
_ROW_START = re.compile(r'^\s*\d+\s+\d+\s+\S')
_RANK = re.compile(
    r'^#?[ \t]*Rank +(\d+) +(?:Group +\d+ +)?Pid +\d+ +on +(\S+) +'
    r'device +(\d+) +\[([^\]]*)\][ \t]*(.*?)[ \t]*$', re.M)
_PARAMS = re.compile(
    r'nThread +(\d+) +nGpus +(\d+) +minBytes +(\d+) +maxBytes +(\d+)'
    r'(?:.*?warmup iters: *(\d+))?(?:.*?\biters: *(\d+))?')
_TESTS_VERSION = re.compile(
    r'^#?[ \t]*(nccl|rccl)-tests(?: version|: Version) +(\S+)'
    r'(?: +\w+-headers=(\d+) +\w+-library=(\d+))?', re.M)
_LIB_VERSION = re.compile(r'\b([NR]CCL) version *:? *(\S+)')
_COLLECTIVE = re.compile(r'Collective test starting:\s*(\S+)')
_OUT_OF_BOUNDS = re.compile(
    r'^#?[ \t]*Out of bounds values *: *(\d+) *(\w+)?', re.M)
_AVG_BUSBW = re.compile(r'^#?[ \t]*Avg bus bandwidth *: *(\S+)', re.M)
_TEST_FAILURE = re.compile(
    r'^.*\bTest (?:NCCL |CUDA |HIP |RCCL )?failure\b.*$', re.M)

_PER_SIDE = ('time', 'algbw', 'busbw', 'wrong')


def _library_version(code: str | None) -> str | None:
    """NCCL_VERSION_CODE (e.g. 22809) as '2.28.9'."""
    if not code or len(code) < 5:
        return None
    number = int(code)
    return f'{number // 10000}.{number // 100 % 100}.{number % 100}'


def _columns(header_line: str) -> list[str] | None:
    """Column names, in-place ones prefixed 'ip_', out-of-place 'oop_'."""
    names = header_line.lstrip('#').split()
    seen: dict[str, int] = {}
    columns = []
    for name in names:
        key = 'wrong' if name in ('#wrong', 'wrong', 'error') else name
        if key in _PER_SIDE:
            side = 'oop_' if seen.get(key, 0) == 0 else 'ip_'
            seen[key] = seen.get(key, 0) + 1
            columns.append(side + key)
        else:
            columns.append(key)
    if 'oop_busbw' not in columns or 'oop_time' not in columns:
        return None
    return columns


def _rows(text: str, columns: list[str]) -> list[dict]:
    rows = []
    for line in text.splitlines():
        if not _ROW_START.match(line):
            continue
        tokens = line.split()
        if len(tokens) != len(columns):
            continue
        cells = dict(zip(columns, tokens))
        row = {'size': int(cells['size']), 'count': int(cells['count']),
               'type': cells.get('type'), 'redop': cells.get('redop')}
        for side in ('oop_', 'ip_'):
            for key in ('time', 'algbw', 'busbw'):
                row[side + key] = to_float(cells.get(side + key))
            # '#wrong' counts wrong elements; the old 'error' column was the
            # largest numeric deviation (never 0 for floats), kept as text.
            row[side + 'wrong'] = cells.get(side + 'wrong')
        rows.append(row)
    return rows


def _wrong_count(token: str | None) -> int:
    if token is None or not token.isdigit():
        return 0  # 'N/A' (alltoall/sendrecv in-place) or an old 'error' value
    return int(token)


def _ranks(text: str) -> tuple[int | None, list[dict]]:
    devices = [{'rank': int(m[1]), 'host': m[2], 'device': int(m[3]),
                'bus_id': m[4], 'name': m[5] or None}
               for m in _RANK.finditer(text)]
    if not devices:
        return None, []
    # Some captures keep only a few rank lines: the highest rank tells.
    return max(d['rank'] for d in devices) + 1, devices


def _run_details(text: str) -> dict:
    details: dict = {}
    match = _TESTS_VERSION.search(text)
    if match:
        details['suite'] = f'{match[1]}-tests'
        details['tests_version'] = match[2]
        if match[4]:
            details['library_version'] = _library_version(match[4])
    for match in _LIB_VERSION.finditer(text):
        details[f'{match[1].lower()}_version'] = match[2]
        details.setdefault('suite', f'{match[1].lower()}-tests')
    match = _COLLECTIVE.search(text)
    if match:
        details['collective'] = match[1]
    match = _PARAMS.search(text)
    if match:
        details.update(nthread=int(match[1]), ngpus=int(match[2]),
                       min_bytes=int(match[3]), max_bytes=int(match[4]))
        if match[5]:
            details['warmup_iters'] = int(match[5])
        if match[6]:
            details['iters'] = int(match[6])
    return details


def _headline(rows: list[dict]) -> tuple[dict[str, Metric], dict]:
    largest = max(r['size'] for r in rows)
    at_largest = [r for r in rows if r['size'] == largest]
    # Several rows share a size only with -d all / -o all: keep the worst.
    worst = min(at_largest, key=lambda r: r['oop_busbw'] or 0.0)
    metrics = {}
    if worst['oop_busbw'] is not None:
        metrics['busbw'] = Metric(worst['oop_busbw'], 'GB/s')
    if worst['oop_algbw'] is not None:
        metrics['algbw'] = Metric(worst['oop_algbw'], 'GB/s')
    if worst['ip_busbw'] is not None:
        metrics['busbw_inplace'] = Metric(worst['ip_busbw'], 'GB/s')
    details = {'largest_size': largest}
    sized = [r for r in rows if r['size'] > 0 and r['oop_time'] is not None]
    if sized:
        smallest = min(sized, key=lambda r: r['size'])
        metrics['latency_small'] = Metric(smallest['oop_time'], 'us')
        details['smallest_size'] = smallest['size']
    return metrics, details


def parse(text: str, expected_ranks: int | None = None) -> ParseResult:
    if not text or not text.strip():
        return failure(TOOL, 'empty output')
    text = strip_rank_prefixes(text)

    details = _run_details(text)
    ranks, devices = _ranks(text)
    if ranks is not None:
        details['ranks'] = ranks
        details['nodes'] = len({d['host'] for d in devices})
        details['devices'] = devices

    failed = _TEST_FAILURE.search(text)
    if failed:
        return failure(TOOL, f'nccl-tests reported: {failed[0].strip()}',
                       details=details)
    aborted = mpi_abort(text)
    if aborted:
        return failure(TOOL, f'MPI launcher abort: {aborted}', details=details)

    header = _HEADER.search(text)
    columns = _columns(header[0]) if header else None
    if columns is None:
        return failure(TOOL, 'not nccl output: no nccl-tests results table '
                       '(no "size count type ..." column header)',
                       details=details)
    rows = _rows(text[header.end():], columns)
    if not rows:
        return failure(TOOL, 'results table has no rows', details=details)
    details['rows'] = rows

    out_of_bounds = _OUT_OF_BOUNDS.search(text)
    if not out_of_bounds:
        return failure(TOOL, 'missing footer "# Out of bounds values": '
                       'output truncated or the run died', details=details)
    details['out_of_bounds'] = int(out_of_bounds[1])
    if int(out_of_bounds[1]) > 0 or out_of_bounds[2] == 'FAILED':
        return failure(TOOL, f'{out_of_bounds[1]} out-of-bounds values: '
                       'nccl-tests found wrong results', details=details)
    for row in rows:
        wrong = _wrong_count(row['oop_wrong']) + _wrong_count(row['ip_wrong'])
        if wrong:
            return failure(TOOL, f'{wrong} wrong values at size {row["size"]}'
                           ' (#wrong column)', details=details)

    if expected_ranks is not None:
        if ranks is None:
            return failure(TOOL, f'expected {expected_ranks} ranks but the '
                           'output has no "# Rank" lines to confirm it',
                           details=details)
        if ranks != expected_ranks:
            return failure(TOOL, f'ran on {ranks} ranks, expected '
                           f'{expected_ranks} (fewer GPUs or tasks than '
                           'asked?)', details=details)

    metrics, headline = _headline(rows)
    details.update(headline)
    avg = _AVG_BUSBW.search(text)
    if avg and to_float(avg[1]) is not None:
        metrics = {'avg_busbw': Metric(to_float(avg[1]), 'GB/s'), **metrics}
    else:
        details['note'] = 'no "# Avg bus bandwidth" line: avg_busbw absent'
    return success(TOOL, metrics, details)
