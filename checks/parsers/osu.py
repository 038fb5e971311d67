"""OSU micro-benchmarks (OMB 5.x and 7.x), point-to-point and collectives.

One value is picked from the curve: ``latency`` (us) at 8 bytes for latency
tests (osu_latency and the collectives' average latency), ``bandwidth``
(MB/s, OMB's 10^6 bytes) at 4 MiB for bandwidth tests. ``parse(text,
size=N)`` picks another message size. When the chosen size is not in the
output and the output holds a single size (a ``-m S:S`` run), that size is
used instead; otherwise the run fails, since a missing row usually means a
cut output. ``details['size']`` always says which size the value is for,
``details['curve']`` holds every row.

OMB has no footer, so an output cut exactly at a line end cannot be told
from a run with a smaller ``-m``; a cut inside a row (no final newline, or
a row shorter than the others) is reported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .base import (Metric, failure, mpi_abort, strip_rank_prefixes, success,
                   to_float)

TOOL = 'osu'

DEFAULT_SIZE = {'latency': 8, 'bandwidth': 4 * 1024 * 1024}
UNITS = {'latency': 'us', 'bandwidth': 'MB/s'}

_TITLE = re.compile(r'^# OSU (?P<name>.+?) Test v?(?P<version>\d[\w.]*)\s*$')
_HEADER = re.compile(r'^#\s*Size\b(?P<columns>.*)$')
_ROW = re.compile(r'^(?P<size>\d+)\s+(?P<values>\S.*)$')
_DATATYPE = re.compile(r'^# Datatype: (?P<datatype>\w+)')
_BUFFERS = re.compile(r'^# Send Buffer on (?P<send>\w+) \(\w\) and '
                      r'Receive Buffer on (?P<recv>\w+) \(\w\)')

# What OMB prints instead of results when it refuses to run.
_TOOL_ERRORS = re.compile(
    r'^(This test requires .*|Invalid option .*|DATA VALIDATION ERROR:.*|'
    r'.*[Ee]rror: .*|Usage: osu_\w+ .*)$', re.M)


@dataclass
class _Scan:
    """What one pass over the lines found."""
    title: re.Match | None = None
    columns: list[str] | None = None
    datatype: str | None = None
    buffers: str | None = None
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    cut_row: int | None = None

    @property
    def name(self) -> str | None:
        return self.title['name'] if self.title else None


def _column_name(label: str) -> str:
    """OMB column label -> key of the curve rows."""
    text = label.lower()
    if 'validation' in text:
        return 'validation'
    if 'iterations' in text:
        return 'iterations'
    if 'messages/s' in text:
        return 'message_rate'
    if 'bandwidth' in text or text.strip() == 'mb/s':
        return 'bandwidth'
    percentile = re.search(r'p(\d+)', text)
    if percentile and 'lat' in text:
        return f'p{percentile.group(1)}_latency'
    if 'lat' in text:
        for stat in ('min', 'max'):
            if stat in text:
                return f'{stat}_latency'
        return 'latency'
    return re.sub(r'\W+', '_', text).strip('_') or 'value'


def _scan(text: str) -> _Scan:
    scan = _Scan()
    lines = text.split('\n')
    last_row_line = None
    for index, raw in enumerate(lines):
        line = raw.strip()
        if scan.title is None and (match := _TITLE.match(line)):
            scan.title = match
        elif scan.columns is None and (match := _HEADER.match(line)):
            labels = re.split(r'\s{2,}', match['columns'].strip())
            scan.columns = [_column_name(c) for c in labels if c]
        elif match := _DATATYPE.match(line):
            scan.datatype = match['datatype']
        elif match := _BUFFERS.match(line):
            scan.buffers = f"{match['send'].lower()}->{match['recv'].lower()}"
        elif scan.columns is not None and (match := _ROW.match(line)):
            scan.rows.append((int(match['size']), match['values'].split()))
            last_row_line = index
    if scan.rows:
        width = max(len(values) for _, values in scan.rows)
        # Rows end with a newline and all have the same width.
        if len(scan.rows[-1][1]) < width or last_row_line == len(lines) - 1:
            scan.cut_row = scan.rows[-1][0]
    # A last line without its newline that holds only a size.
    if scan.columns is not None and (
            match := re.match(r'\s*(\d+)\s*$', lines[-1])):
        scan.cut_row = int(match[1])
    return scan


def _kind(title_name: str | None, first_column: str) -> str | None:
    if first_column in ('latency', 'bandwidth'):
        return first_column
    if title_name and 'Bandwidth' in title_name:
        return 'bandwidth'
    if title_name and 'Latency' in title_name:
        return 'latency'
    return None


def _device(title_name: str | None, buffers: str | None) -> str:
    for device in ('CUDA', 'ROCM', 'SYCL', 'OPENACC'):
        if device in (title_name or ''):
            return device.lower()
    if buffers and 'device' in buffers:
        return 'device'
    return 'host'


def _cell(token: str):
    if token in ('Pass', 'Fail'):
        return token
    return to_float(token)


def _curve(scan: _Scan) -> list[dict]:
    curve = []
    for size, values in scan.rows:
        names = list(scan.columns)
        if len(names) != len(values):
            # Header split unlike the row: name the extra columns by place.
            names = [names[0]] + [f'column{i}' for i in
                                  range(2, len(values) + 1)]
            if values[-1] in ('Pass', 'Fail'):
                names[-1] = 'validation'
        point = {'size': size}
        point.update({name: _cell(token) for name, token in zip(names, values)})
        curve.append(point)
    return curve


def _tool_error(text: str) -> str | None:
    match = _TOOL_ERRORS.search(text)
    return match.group(1).strip() if match else None


def failure_cause(stderr: str) -> str | None:
    """What OMB or the MPI launcher said on stderr when a run gave no
    results (wrong process count, bad option, abort), if anything."""
    text = strip_rank_prefixes((stderr or '').replace('\r', ''))
    return _tool_error(text) or mpi_abort(text)


def _no_table(scan: _Scan, error: str | None, abort: str | None):
    if error:
        return failure(TOOL, f'OSU benchmark did not run: {error}')
    if abort:
        return failure(TOOL, f'MPI abort: {abort}')
    if scan.title:
        return failure(TOOL, f"only the title line '{scan.title.group(0)}' "
                             '(version flag, or cut before the results)')
    return failure(TOOL, 'not osu output (OSU micro-benchmarks) '
                         "(no '# OSU ... Test' title, no '# Size' header)")


def _pick(curve: list[dict], kind: str, size: int | None, details: dict):
    wanted = DEFAULT_SIZE[kind] if size is None else int(size)
    point = next((p for p in curve if p['size'] == wanted), None)
    if point is None and len(curve) == 1:
        point = curve[0]
        details['size_note'] = (f'{wanted} bytes not measured; the only size '
                                f"in the output ({point['size']} bytes) used")
    if point is None:
        return failure(TOOL, f'no row for {wanted} bytes (sizes '
                             f"{curve[0]['size']}..{curve[-1]['size']}): cut "
                             'output, or pass the size the run measured',
                       details=details)
    details['size'] = point['size']
    return success(TOOL, {kind: Metric(point[kind], UNITS[kind])}, details)


def parse(text: str, size: int | None = None, validated: bool = False):
    """``validated``: the run asked for OMB's validation (-c): every row
    must then say Pass."""
    text = strip_rank_prefixes((text or '').replace('\r', ''))
    if not text.strip():
        return failure(TOOL, 'empty output: no OSU benchmark results')
    scan = _scan(text)
    error, abort = _tool_error(text), mpi_abort(text)
    if not scan.columns:
        return _no_table(scan, error, abort)

    kind = _kind(scan.name, scan.columns[0])
    details = {
        'benchmark': scan.name,
        'version': scan.title['version'] if scan.title else None,
        'datatype': scan.datatype,
        'buffers': scan.buffers,
        'device': _device(scan.name, scan.buffers),
        'columns': ['size', *scan.columns],
    }
    if kind is None:
        return failure(TOOL, f'unknown OSU result column {scan.columns[0]!r}',
                       details=details)
    if not scan.rows:
        cause = error or abort or 'cut output?'
        return failure(TOOL, f'no result rows after the header ({cause})',
                       details=details)
    if scan.cut_row is not None:
        return failure(TOOL, f'output cut in the row for {scan.cut_row} '
                             'bytes (truncated)', details=details)

    details['curve'] = curve = _curve(scan)
    missing = [p['size'] for p in curve if p.get(kind) is None]
    if missing:
        return failure(TOOL, f'no {kind} value in the row for {missing[0]} '
                             'bytes', details=details)
    failed = [p['size'] for p in curve if p.get('validation') == 'Fail']
    if failed:
        return failure(TOOL, 'OSU validation Fail at '
                             f"{', '.join(map(str, failed))} bytes",
                       details=details)
    unchecked = [p['size'] for p in curve if p.get('validation') != 'Pass']
    if validated and unchecked:
        return failure(TOOL, 'validation (-c) was asked for, but the row '
                             f'for {unchecked[0]} bytes does not say Pass '
                             '(an OMB without -c support?)', details=details)
    if error and error.startswith('DATA VALIDATION ERROR'):
        return failure(TOOL, error, details=details)
    if abort:
        return failure(TOOL, f'MPI abort: {abort}', details=details)
    return _pick(curve, kind, size, details)


def buffer_problem(details: dict, buffer: str) -> str | None:
    """Why a parsed run did not use the buffers asked for, or None.

    ``buffer``: 'cpu' (nothing to prove) or a device kind such as 'cuda'
    (-d cuda): OMB then titles its output "OSU MPI-CUDA ..." or prints
    "Buffer on DEVICE"; without either the run used host memory.
    """
    if buffer in ('', 'cpu', 'host'):
        return None
    used = details.get('device')
    if used in (buffer, 'device'):
        return None
    return (f'GPU buffers were asked for (-d {buffer}), but OMB ran with '
            f'{used or "unknown"} buffers (no "MPI-{buffer.upper()}" title, '
            'no "Buffer on DEVICE" line)')
