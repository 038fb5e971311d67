"""perftest output (ib_send_bw, ib_write_bw, ib_read_bw, ib_*_lat), any side.

Bandwidth tests give ``bw_peak`` and ``bw_avg`` in Gb/s (1e9 bit/s), plus
``msg_rate`` (Mpps). perftest prints Gb/sec with ``--report_gbits``, else
``MB/sec`` (older releases) or ``MiB/sec`` (newer ones): both of the latter
are 2**20 bytes, since perftest divides by 0x100000 either way (the MsgRate
column agrees: bw / (msg rate * size) = 2**20).
Latency tests give ``lat_min``, ``lat_typical``, ``lat_avg``, ``lat_p99``,
``lat_p999`` and ``lat_max`` in µs, as far as the table has those columns.

With ``-a`` (one row per message size) bandwidth comes from the largest
size and latency from the smallest; ``details['rows']`` keeps every row.
"""
from __future__ import annotations

import re

from .base import Metric, ParseResult, failure, success, to_float

TOOL = 'perftest'

_DASHES = re.compile(r'^-{20,}\s*$')
_TITLE = re.compile(r'^\s*([A-Za-z][\w ]*?) (BW|Latency) Test\s*$')
# A column name starts a run of name characters: no retry inside a run.
_HEADER_COLUMN = re.compile(r'#\w+|(?<![\w.%])[\w.%]+(?: [\w%]+)?\[[^\]\[]+\]')
_ROW = re.compile(r'^\s*\d+\s+\d+\s+[\d.]')
_ERROR = re.compile(
    r"^.*(Couldn't|Unable to|Failed to|failed to|Completion with error|"
    r'Problems with|ERROR|Error:|not found|Can.t produce a report|'
    r'No IB devices found|Connection refused|Timed out).*$', re.M)
_GPU_MEMORY = re.compile(
    r'Use \w+ memory\s*:\s*ON|GPU buffer|initializing CUDA|Using ROCm Device')
_SERVER = re.compile(r'Waiting for client to connect')

# perftest column name -> (metric, factor to our unit). Bandwidth factors
# turn the printed unit into Gb/s.
_MIB_TO_GBIT = 2 ** 20 * 8 / 1e9
_BW_UNITS = {'Gb/sec': 1.0, 'MB/sec': _MIB_TO_GBIT, 'MiB/sec': _MIB_TO_GBIT}
_LAT_COLUMNS = {
    't_min[usec]': 'lat_min', 't_max[usec]': 'lat_max',
    't_typical[usec]': 'lat_typical', 't_avg[usec]': 'lat_avg',
    't_stdev[usec]': 'lat_stdev', '99% percentile[usec]': 'lat_p99',
    '99.9% percentile[usec]': 'lat_p999',
}


def _banner_settings(lines: list[str]) -> dict:
    """'Key : value' pairs between the title and the next dashed line."""
    settings = {}
    for line in lines[1:]:
        if _DASHES.match(line):
            break
        for key, value in _key_values(line):
            settings.setdefault(key, value)
    return settings


def _is_key_char(char: str) -> bool:
    return char.isalnum() or char in '_*. -'


def _key_values(line: str):
    """'Key : value' pairs of one line, e.g. ' Number of qps : 1   Transport
    type : IB'. Keys start with a letter; a scan from colon to colon reads
    each character a bounded number of times (a regular expression retried
    at every position of a long line without a colon would not)."""
    pos = 0
    while (colon := line.find(':', pos)) >= 0:
        end = colon
        while end > pos and line[end - 1] in ' \t':
            end -= 1
        start = end
        while start > pos and _is_key_char(line[start - 1]):
            start -= 1
        while start < end and not (line[start].isascii() and
                                   line[start].isalpha()):
            start += 1
        if start == end:
            pos = colon + 1
            continue
        value_start = colon + 1
        while value_start < len(line) and line[value_start] in ' \t':
            value_start += 1
        value_end = value_start
        while value_end < len(line) and not line[value_end].isspace():
            value_end += 1
        if value_end > value_start:
            yield line[start:end].strip(), line[value_start:value_end]
            pos = value_end
        else:
            pos = colon + 1


def _table(lines: list[str]) -> tuple[int, list[str]] | None:
    for index, line in enumerate(lines):
        if line.lstrip().startswith('#bytes'):
            return index, _HEADER_COLUMN.findall(line)
    return None


def _read_rows(lines: list[str], columns: list[str]) -> tuple[list, bool]:
    """Numeric rows after the header and whether a dashed line closed them."""
    rows = []
    for line in lines:
        if _DASHES.match(line):
            return rows, True
        if not _ROW.match(line):
            continue  # 'Conflicting CPU frequency' and similar warnings
        values = line.split()
        if len(values) < len(columns):
            continue
        rows.append({name: to_float(value)
                     for name, value in zip(columns, values)})
    return rows, False


def _bandwidth(rows: list[dict], columns: list[str]):
    peak_col = next(c for c in columns if c.startswith('BW peak['))
    avg_col = next((c for c in columns if c.startswith('BW average[')), None)
    unit = peak_col[len('BW peak['):-1]
    factor = _BW_UNITS.get(unit)
    if factor is None:
        return None, {'unit_printed': unit}
    row = max(rows, key=lambda r: r['#bytes'])
    metrics = {}
    details = {'unit_printed': unit, 'row_used': 'largest message size',
               'msg_size': int(row['#bytes'])}
    peak = row[peak_col]
    average = row[avg_col] if avg_col else None
    if peak is not None and (peak > 0 or not average):
        metrics['bw_peak'] = Metric(round(peak * factor, 4), 'Gb/s')
    else:
        details['note'] = 'BW peak printed as 0 (not measured with -D)'
    if average is not None:
        metrics['bw_avg'] = Metric(round(average * factor, 4), 'Gb/s')
    if row.get('MsgRate[Mpps]') is not None:
        metrics['msg_rate'] = Metric(row['MsgRate[Mpps]'], 'Mpps')
    return metrics, details


def _latency(rows: list[dict], columns: list[str]):
    row = min(rows, key=lambda r: r['#bytes'])
    metrics = {metric: Metric(row[column], 'us')
               for column, metric in _LAT_COLUMNS.items()
               if column in columns and row.get(column) is not None}
    return metrics, {'row_used': 'smallest message size',
                     'msg_size': int(row['#bytes'])}


def _run_details(text: str, lines: list[str], title: re.Match) -> dict:
    settings = _banner_settings(lines)
    details = {
        'test': title[1].replace(' Bidirectional', ''),
        'kind': 'bw' if title[2] == 'BW' else 'lat',
        'bidirectional': 'Bidirectional' in title[1],
        'device': settings.get('Device'),
        'qps': int(settings['Number of qps'])
        if settings.get('Number of qps', '').isdigit() else None,
        'transport': settings.get('Transport type'),
        'connection': settings.get('Connection type'),
        'link_type': settings.get('Link type'),
        'mtu': settings.get('Mtu'),
        'rdma_cm': settings.get('rdma_cm QPs'),
        'gpu_memory': bool(_GPU_MEMORY.search(text)),
    }
    if _SERVER.search(text):
        details['side'] = 'server'
    return details


def parse(text: str) -> ParseResult:
    if not text or not text.strip():
        return failure(TOOL, 'empty output')
    lines = text.splitlines()
    titles = [(i, m) for i, line in enumerate(lines)
              if (m := _TITLE.match(line))]
    error = _ERROR.search(text)
    if not titles:
        reason = ('not perftest output: no perftest banner ("... BW Test" / '
                  '"... Latency Test")')
        if error:
            reason = f'perftest failed: {error[0].strip()}'
        return failure(TOOL, reason)
    if len(titles) > 1:
        return failure(TOOL, f'{len(titles)} perftest runs in one output; '
                       'give one run per file')
    start, title = titles[0]
    details = _run_details(text, lines[start:], title)

    table = _table(lines[start:])
    if table is None:
        reason = f'perftest failed: {error[0].strip()}' if error else (
            'no result table ("#bytes ..." header): output truncated?')
        return failure(TOOL, reason, details=details)
    offset, columns = table
    rows, closed = _read_rows(lines[start + offset + 1:], columns)
    if rows:
        details['rows'] = rows
    if error:
        return failure(TOOL, f'perftest failed: {error[0].strip()}',
                       details=details)
    if not rows:
        return failure(TOOL, 'result table has no rows (server side of a '
                       'latency test, or the run died)', details=details)
    if not closed:
        return failure(TOOL, 'result table not closed by a dashed line: '
                       'output truncated?', details=details)

    if details['kind'] == 'bw':
        if not any(c.startswith('BW peak[') for c in columns):
            return failure(TOOL, 'bandwidth table without a "BW peak" '
                           'column', details=details)
        metrics, more = _bandwidth(rows, columns)
        if metrics is None:
            unit = more['unit_printed']
            return failure(TOOL, f'unknown bandwidth unit {unit!r}',
                           details=details)
    else:
        metrics, more = _latency(rows, columns)
    details.update(more)
    if not metrics:
        return failure(TOOL, 'no values in the result row', details=details)
    return success(TOOL, metrics, details)


def transport_problem(details: dict, gpu_memory: bool,
                      link_type: str | None) -> str | None:
    """Why a parsed run did not measure what was asked, or None.

    ``gpu_memory``: the run asked for GPU buffers (--use_cuda/--use_rocm);
    perftest then prints how it set them up, and without those lines the
    buffers were in host memory. ``link_type``: 'IB' on InfiniBand (RoCE
    shows 'Ethernet'); None or '' accepts any.
    """
    if gpu_memory and not details.get('gpu_memory'):
        return ('GPU memory was asked for, but perftest reports no GPU '
                'buffer (no "initializing CUDA" / "GPU buffer" lines): the '
                'run measured host memory')
    shown = details.get('link_type')
    if link_type and shown and shown != link_type:
        return f'link type {shown}, expected {link_type}'
    return None
