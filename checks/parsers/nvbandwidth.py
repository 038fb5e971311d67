"""nvbandwidth (NVIDIA/nvbandwidth): copy bandwidth of every GPU, in GB/s.

One metric per testcase and GPU, ``<testcase>_gpu<i>``:

- a GPU-to-GPU testcase (its matrix says ``GPU(row)``, e.g.
  ``device_to_device_memcpy_read_ce``): the smallest cell of GPU i's row,
  i.e. its slowest peer, which ``details['slowest_peer']`` names;
- any other (``CPU(row)`` as in ``host_to_device_memcpy_ce``, ``All Gpus``
  as in ``all_to_one_write_ce``): the cell of GPU i's column.

Bandwidths are in GB/s, latency testcases (``... (ns)``) in ns.

Every layout seen in public outputs is read: v0.2-v0.7 text with a
``Device N: <name> (<bus id>)`` list or none (an excerpt), the multi-node
build's ``Process P (<host>): device D: <name> (<bus id>)`` list (GPU i is
then MPI process i), and the JSON document of ``-j`` (json_output.cpp of
NVIDIA/nvbandwidth v0.8, commit 66746a3: ``{"nvbandwidth": {"testcases":
[{"name", "status", "bandwidth_matrix"}]}}``). Lines the parser does not
know (statistics newer versions print under a matrix, launcher noise) are
skipped.

A testcase counts only when its whole matrix and its ``SUM`` line were
printed (the JSON: status ``Passed``). One that started and stopped (a run
cut short, an error) makes the output fail, naming it; the testcases that
finished keep their metrics. Waived testcases are listed, not failed.
Reads each line once.
"""
from __future__ import annotations

import json
import re

from .base import Metric, ParseResult, failure, success, to_float

TOOL = 'nvbandwidth'
UNIT = 'GB/s'

_RUNNING = re.compile(r'^Running (\w+)\.\s*$')
_SUM = re.compile(r'^SUM (\w+) (\S+)\s*$')
# matched on stripped lines; the bus id is split off by name_and_bus_id
_DEVICE = re.compile(r'^Device (\d+): (.*)$')
_PROCESS = re.compile(r'^Process (\d+) \(([^)]*)\): device (\d+): (.*)$')
_BUS_ID = re.compile(r'^[0-9a-fA-F:.]+$')
_HEADER_FIELDS = {
    'version': re.compile(r'^nvbandwidth Version: (\S+)'),
    'git_version': re.compile(r'^Built from Git version: (\S+)'),
    'cuda_runtime': re.compile(r'^CUDA Runtime Version: (.+)$'),
    'driver': re.compile(r'^Driver Version: (\S+)'),
}
# "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
# "memory latency SM CPU(row) <-> GPU(column) (ns)"
_DESCRIPTION = re.compile(r'\((?:row|column)\).*\((GB/s|ns)\)\s*$')


def name_and_bus_id(text: str) -> tuple[str, str | None]:
    """'NVIDIA GH200 480GB (00000009:01:00)' -> the name and the bus id."""
    start = text.rfind(' (')
    if text.endswith(')') and start >= 0 and \
            _BUS_ID.match(text[start + 2:-1]):
        return text[:start], text[start + 2:-1]
    return text, None


def is_pair_testcase(description: str) -> bool:
    """A matrix of GPU pairs (row GPU, column GPU); the others have one
    cell per GPU column."""
    return 'GPU(row)' in description


def unit_of(description: str) -> str:
    match = _DESCRIPTION.search(description)
    return match.group(1) if match else UNIT


class _Testcase:
    def __init__(self, name: str):
        self.name = name
        self.description = ''
        self.columns: list[str] | None = None
        self.rows: list[tuple[str, list[float | None]]] = []
        self.total: float | None = None
        self.status = 'Running'
        self.problem = ''

    def finished(self) -> bool:
        return self.total is not None and bool(self.rows) and not self.problem


def _matrix_row(line: str, width: int) -> tuple[str, list[float | None]] | None:
    tokens = line.split()
    if len(tokens) != width + 1:
        return None
    values = [None if token == 'N/A' else to_float(token)
              for token in tokens[1:]]
    if any(value is None and token != 'N/A'
           for value, token in zip(values, tokens[1:])):
        return None
    return tokens[0], values


def _read_text(text: str):
    header, devices = {}, {}
    testcases: list[_Testcase] = []
    waived = 0
    current: _Testcase | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        running = _RUNNING.match(stripped)
        if running:
            current = _Testcase(running.group(1))
            testcases.append(current)
            continue
        if current is None:
            for name, pattern in _HEADER_FIELDS.items():
                match = pattern.match(stripped)
                if match and name not in header:
                    header[name] = match.group(1)
            device = _DEVICE.match(stripped)
            if device:
                name, bus_id = name_and_bus_id(device.group(2))
                devices[int(device.group(1))] = {'name': name,
                                                 'bus_id': bus_id}
            process = _PROCESS.match(stripped)
            if process:
                name, bus_id = name_and_bus_id(process.group(4))
                devices[int(process.group(1))] = {
                    'host': process.group(2),
                    'local_device': int(process.group(3)),
                    'name': name, 'bus_id': bus_id}
            if stripped.startswith('Waived'):
                waived += 1
            continue
        total = _SUM.match(stripped)
        if total:
            if total.group(1) == current.name:
                current.total = to_float(total.group(2))
            current = None
            continue
        if not current.description:
            if _DESCRIPTION.search(stripped):
                current.description = stripped
            elif stripped and ':' in stripped.split()[0]:
                # "Waived: ..." or "Error: ..." right after "Running X."
                current.status = stripped.split(':', 1)[0]
                current.problem = stripped
                current = None
            continue
        if current.columns is None:
            if stripped:
                current.columns = stripped.split()
            continue
        if not stripped:
            continue
        row = _matrix_row(stripped, len(current.columns))
        if row is None:
            # not a row of this matrix: statistics below it, or junk that
            # cuts it short (the SUM line then decides)
            if not current.total and current.rows and \
                    stripped.split()[0] == current.rows[-1][0]:
                current.problem = f'row {stripped.split()[0]} is cut short'
            continue
        current.rows.append(row)
    return header, devices, testcases, waived


def _from_json(document: dict):
    body = document.get('nvbandwidth')
    if not isinstance(body, dict):
        return None
    header = {'version': body.get('version'),
              'git_version': body.get('git_version'),
              'cuda_runtime': body.get('CUDA Runtime Version'),
              'driver': body.get('Driver Version')}
    header = {name: str(value) for name, value in header.items()
              if value is not None}
    devices = {}
    for entry in body.get('GPU Device list') or []:
        # "<index>: <name> (<bus id>): (<host>)"
        index, _, rest = str(entry).partition(': ')
        if not index.isdigit() or len(index) > 6:
            continue
        host = None
        cut = rest.rfind(': (')
        if rest.endswith(')') and cut >= 0:
            rest, host = rest[:cut], rest[cut + 3:-1]
        name, bus_id = name_and_bus_id(rest)
        devices[int(index)] = {'name': name, 'bus_id': bus_id,
                               **({'host': host} if host else {})}
    testcases, waived = [], 0
    for item in body.get('testcases') or []:
        if not isinstance(item, dict):
            continue
        case = _Testcase(str(item.get('name', '')))
        case.status = str(item.get('status', ''))
        if case.status == 'Waived':
            waived += 1
            continue
        case.description = str(item.get('bandwidth_description', ''))
        matrix = item.get('bandwidth_matrix')
        if case.status == 'Passed' and isinstance(matrix, list) and matrix:
            width = max(len(row) for row in matrix if isinstance(row, list))
            case.columns = [str(i) for i in range(width)]
            for index, row in enumerate(matrix):
                values = [None if cell == 'N/A' else to_float(cell)
                          for cell in (row if isinstance(row, list) else [])]
                case.rows.append((str(index), values))
            case.total = to_float(item.get('sum'))
        else:
            case.problem = str(item.get('error') or f'status {case.status}')
        testcases.append(case)
    if body.get('error'):
        header['error'] = str(body['error'])
    return header, devices, testcases, waived


def _json_document(text: str) -> dict | None:
    start = text.find('{')
    end = text.rfind('}')
    if start < 0 or end < start or '"nvbandwidth"' not in text[start:end]:
        return None
    try:
        document = json.loads(text[start:end + 1])
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _gpu_values(case: _Testcase) -> tuple[dict[int, float], dict[int, int]]:
    """GPU index -> its value in this testcase, and (GPU-to-GPU testcases)
    GPU index -> the peer of its smallest cell."""
    values, peers = {}, {}
    if not is_pair_testcase(case.description):
        for column in range(len(case.columns or [])):
            cells = [row[column] for _, row in case.rows
                     if column < len(row) and row[column] is not None]
            if cells:
                values[column] = min(cells)
        return values, peers
    for index, (_, row) in enumerate(case.rows):
        cells = [(value, peer) for peer, value in enumerate(row)
                 if value is not None and peer != index]
        if cells:
            value, peer = min(cells)
            values[index], peers[index] = value, peer
    return values, peers


def parse(text: str) -> ParseResult:
    document = _json_document(text)
    read = _from_json(document) if document is not None else None
    layout = 'json' if read is not None else 'text'
    if read is None:
        read = _read_text(text)
    header, devices, testcases, waived = read
    if not testcases and not waived:
        if header.get('error'):
            return failure(TOOL, f'nvbandwidth failed: {header["error"]}')
        return failure(TOOL, "not nvbandwidth output: no 'Running "
                             "<testcase>.' line and no JSON testcases")
    metrics: dict[str, Metric] = {}
    details: dict = {'layout': layout, **header,
                     'devices': {str(i): info
                                 for i, info in sorted(devices.items())},
                     'testcases': {}, 'slowest_peer': {},
                     'waived': waived}
    unfinished = []
    for case in testcases:
        if not case.finished():
            if case.status != 'Waived':
                unfinished.append(case)
            continue
        values, peers = _gpu_values(case)
        if devices and values and max(values) >= len(devices):
            unfinished.append(case)
            case.problem = (f'its matrix has GPU {max(values)} but the '
                            f'device list names {len(devices)} GPU(s)')
            continue
        details['testcases'][case.name] = {
            'description': case.description, 'sum': case.total,
            'matrix': [row for _, row in case.rows]}
        for gpu, value in values.items():
            metrics[f'{case.name}_gpu{gpu}'] = Metric(
                value, unit_of(case.description))
        if peers:
            details['slowest_peer'][case.name] = {
                str(gpu): peer for gpu, peer in peers.items()}
    if unfinished:
        reasons = [f'{case.name}: {case.problem}' if case.problem else
                   f'{case.name} started but printed no complete matrix '
                   'and SUM line (the run was cut short)'
                   for case in unfinished]
        return failure(TOOL, '; '.join(reasons), metrics, details)
    if not metrics:
        return failure(TOOL, 'nvbandwidth measured nothing: every testcase '
                             'was waived', metrics, details)
    return success(TOOL, metrics, details)
