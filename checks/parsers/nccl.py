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


def parse(text: str, expected_ranks: int | None = None,
          fabric: str | None = None) -> ParseResult:
    """``fabric``: fail unless NCCL's INFO log proves that fabric
    (``transport_problem``; 'nvlink' for one VM, 'ib' or 'mnnvl' across
    VMs); None = report the transport without judging it."""
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

    summary = transport(text)
    details['transport'] = summary
    multinode = fabric in ('ib', 'mnnvl') if fabric else \
        details.get('nodes', 1) > 1
    details['fabric'] = measured_fabric(summary, multinode)
    if fabric:
        problem = transport_problem(summary, multinode, fabric)
        if fabric == 'ib' and details.get('nodes') == 1 and not problem:
            problem = loopback_problem(summary)
        if problem:
            return failure(TOOL, problem, details=details)

    metrics, headline = _headline(rows)
    details.update(headline)
    avg = _AVG_BUSBW.search(text)
    if avg and to_float(avg[1]) is not None:
        metrics = {'avg_busbw': Metric(to_float(avg[1]), 'GB/s'), **metrics}
    else:
        details['note'] = 'no "# Avg bus bandwidth" line: avg_busbw absent'
    return success(TOOL, metrics, details)


# -- the transport NCCL chose, from its own log (NCCL_DEBUG=INFO) -----------
#
# NCCL prints one line per connection it builds, naming the transport after
# "via": NET/IB/<dev>/GDRDMA (InfiniBand, GPUDirect RDMA), NET/IB/<dev> (IB,
# staged through host memory), NET/Socket/<dev> (TCP), P2P/IPC, P2P/CUMEM or
# P2P/direct pointer (GPU to GPU inside a node: NVLink on ND VMs), SHM (host
# shared memory). NVLS (NVLink SHARP) announces itself at init.

_CHANNEL = re.compile(
    r'NCCL INFO (?:Channel|Ring) \d+\S* : .*? via (.+?)'
    r'(?: comm 0x[0-9a-fA-F]+.*)?[ \t]*$', re.M)
_NCCL_INFO = re.compile(r'\bNCCL INFO\b')
_USING_NETWORK = re.compile(r'NCCL INFO Using network (\S+)')
_NVLS = re.compile(r'NVLS multicast support is available|Connected NVLS|'
                   r'\b[1-9]\d* nvls channels')
_MNNVL = re.compile(r'\bMNNVL 1\b|via P2P/MNNVL')

#: Fabrics a run can be expected to use (NcclBase: 'nvlink' on one VM).
FABRICS = ('nvlink', 'ib', 'mnnvl')


def _channel_kind(via: str) -> str:
    """'NET/IB/3/GDRDMA' -> 'NET/IB/GDRDMA', 'P2P/direct pointer' ->
    'P2P/direct pointer', 'SHM/direct/direct' and 'direct shared memory'
    -> 'SHM'."""
    parts = via.split('/')
    if parts[0] == 'NET' and len(parts) > 1:
        gdr = '/GDRDMA' if 'GDRDMA' in parts[2:] else ''
        return f'NET/{parts[1]}{gdr}'
    if parts[0] == 'SHM' or 'shared memory' in via:
        return 'SHM'
    if parts[0] == 'P2P' and len(parts) > 1:
        return f'P2P/{parts[1]}'
    return via


def transport(text: str) -> dict:
    """What NCCL's INFO log says about how the ranks talked.

    ``logged``: any NCCL INFO line at all; ``channels``: connections per
    transport kind (``_channel_kind``); ``network``: the "Using network"
    names; ``nvls`` / ``mnnvl``: NVLink SHARP, multi-node NVLink seen.
    """
    channels: dict[str, int] = {}
    for match in _CHANNEL.finditer(text):
        kind = _channel_kind(match[1].strip())
        channels[kind] = channels.get(kind, 0) + 1
    return {
        'logged': bool(_NCCL_INFO.search(text)),
        'channels': channels,
        'network': sorted(set(_USING_NETWORK.findall(text))),
        'nvls': bool(_NVLS.search(text)),
        'mnnvl': bool(_MNNVL.search(text)),
    }


def _count(channels: dict, predicate) -> int:
    return sum(n for kind, n in channels.items() if predicate(kind))


def _describe(channels: dict, predicate) -> str:
    return ', '.join(f'{n} x {kind}' for kind, n in sorted(channels.items())
                     if predicate(kind))


def _is_net(kind: str) -> bool:
    return kind.startswith('NET/')


def _is_ib(kind: str) -> bool:
    """InfiniBand verbs, NCCL's own (NET/IB) or a plugin's: HPC-X's SHARP
    plugin on the Azure HPC images says NET/IBext[_v<n>], NVIDIA's newer
    one NET/NCCL RDMA Plugin v<n>."""
    if not _is_net(kind):
        return False
    name = kind.split('/')[1]
    return name.startswith('IB') or 'RDMA Plugin' in name


def _is_ib_gdr(kind: str) -> bool:
    return _is_ib(kind) and kind.endswith('/GDRDMA')


def measured_fabric(summary: dict, multinode: bool) -> str | None:
    """The fabric the log proves, or None when it proves none."""
    channels = summary['channels']
    net = _count(channels, _is_net)
    if not multinode:
        local = _count(channels, lambda k: k.startswith('P2P/'))
        shm = _count(channels, lambda k: k == 'SHM')
        if net or shm or not (local or summary['nvls']):
            return None
        return 'nvlink'
    gdr = _count(channels, _is_ib_gdr)
    if net and gdr == net:
        return 'ib'
    if not net and summary['mnnvl']:
        return 'mnnvl'
    return None


def loopback_problem(summary: dict) -> str | None:
    """Why an InfiniBand run on one VM (the health checks' IB loopback,
    shared memory and P2P off) did not go through the VM's HCAs only, or
    None: a channel inside the VM (P2P, SHM) is not the test."""
    inside = _describe(summary['channels'], lambda k: not _is_net(k))
    if inside:
        return ('an InfiniBand loopback run on one VM also moved data '
                f'inside the VM, not through its HCAs: {inside}')
    return None


def transport_problem(summary: dict, multinode: bool,
                      expected: str) -> str | None:
    """Why the log does not prove the ``expected`` fabric, or None.

    ``expected``: 'nvlink' (one VM: NVLink P2P or NVLS, nothing through
    the host or the network), 'ib' (InfiniBand with GPUDirect RDMA between
    VMs) or 'mnnvl' (multi-node NVLink, no network channel).
    """
    if not summary['logged']:
        return ('no NCCL INFO lines in the output (NCCL_DEBUG=INFO not in '
                'effect?): the transport is unproven')
    channels = summary['channels']
    found = measured_fabric(summary, multinode)
    if found == expected:
        return None
    socket = _describe(channels, lambda k: k.startswith('NET/Socket'))
    if socket:
        return f'NCCL fell back to sockets (TCP, no InfiniBand): {socket}'
    if not multinode:
        net = _describe(channels, _is_net)
        if net:
            return f'a one-VM run went through the network: {net}'
        if channels.get('SHM'):
            return ('GPUs exchanged data through host shared memory, not '
                    f'NVLink: {channels["SHM"]} x SHM channel(s)')
        return ('no NVLink channel ("via P2P/...") and no NVLS in NCCL\'s '
                'log: the transport is unproven')
    no_gdr = _describe(channels, lambda k: _is_ib(k) and not _is_ib_gdr(k))
    if no_gdr:
        return (f'InfiniBand without GPUDirect RDMA (no /GDRDMA): {no_gdr}')
    other = _describe(channels, lambda k: _is_net(k) and not _is_ib(k))
    if other:
        return f'inter-node traffic not over InfiniBand: {other}'
    if expected == 'mnnvl':
        return (f'expected multi-node NVLink, found {found or "no proof"}: '
                + (_describe(channels, _is_net) or 'no MNNVL in the log'))
    if found == 'mnnvl':
        return 'expected InfiniBand, but the VMs talked over multi-node NVLink'
    return ('no inter-node channel ("via NET/...") in NCCL\'s log: the '
            'transport is unproven')
