"""Every GPU of one node accounted for: the GPU node checks' outputs
(checks/gpu/gpu_node.py) -> rows and findings, as the health assessment
gives them (assessment.Row, assessment.Finding), each about one GPU named
by its index, PCI bus id and serial.

- inventory: each GPU's ``nvidia-smi -q -i N`` (and its exit status) against
  the SKU's GPU count, bus ids where a public layout gives them, persistence
  mode and ECC (checks/references/health.yaml): a GPU missing, one that did
  not answer within the time limit, a mode other than the SKU's;
- NVLink: each GPU's ``nvidia-smi nvlink -s`` against the SKU's link count
  and speed (assessment.nvlink_state, the one NVLink assessment);
- DCGM: each plugin's result per GPU (checks/parsers/dcgmi.py): a failing
  GPU is bad, an internal error of the test is the node's test's (no GPU
  named), a plugin skipped on every GPU is not measured.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..parsers import dcgmi, nvidia_smi
from . import assessment, nvlink

INVENTORY_METRIC = 'gpu_inventory'
NVLINK_METRIC = 'nvlink'
TIMED_OUT = 124            # timeout(1)'s exit status


@dataclass
class Expected:
    """What the SKU's GPUs should show (None = not judged)."""
    count: int | None = None
    bus_ids: list[str] = field(default_factory=list)
    count_source: str = ''
    persistence: str | None = None
    ecc: str | None = None
    modes_source: str = ''


def expected(vm_sku: str | None, gpus_per_node: int | None = None
             ) -> Expected:
    """The SKU's entries of checks/references/health.yaml (``gpus``,
    ``gpu_modes``); the partition's gpus_per_node where no entry says."""
    from ..common import references
    from .rules import load
    data = load()
    sku = references.short_sku(vm_sku)
    sources = data.get('sources', {})
    gpus = references._entry_for_sku(data, sku, 'gpus') if sku else {}
    modes = references._entry_for_sku(data, sku, 'gpu_modes') if sku else {}
    return Expected(
        count=gpus.get('count') or gpus_per_node or None,
        bus_ids=[str(b).upper() for b in gpus.get('bus_ids') or []],
        count_source=sources.get(gpus.get('source'), '')
        if gpus else 'the partition\'s gpus_per_node',
        persistence=modes.get('persistence'), ecc=modes.get('ecc'),
        modes_source=sources.get(modes.get('source'), ''))


def identities(text: str) -> dict[int, dict]:
    """index -> {'index', 'bus_id', 'serial'} of every GPU an
    ``nvidia-smi -q`` output shows."""
    gpus, _ = nvidia_smi.gpu_sections(text)
    return {g['index']: {'index': g['index'], 'bus_id': g.get('bus_id'),
                         'serial': g.get('serial')} for g in gpus}


def label(gpu: dict | None) -> str:
    """'GPU 5 (bus 0000000A:00:00.0, serial 1654922009876)'."""
    if not gpu:
        return ''
    named = [f"bus {gpu['bus_id']}" if gpu.get('bus_id') else '',
             f"serial {gpu['serial']}" if gpu.get('serial') else '']
    named = ', '.join(n for n in named if n)
    return f"GPU {gpu.get('index')}" + (f' ({named})' if named else '')


def named_reason(reason: str, gpu: dict | None) -> str:
    """'GPU 5 NVLink 3 inactive' -> 'GPU 5 (bus 0000000A:00:00.0, serial
    1651323018205) NVLink 3 inactive': what a drain reason and a summary
    say of a GPU."""
    if not gpu or gpu.get('index') is None:
        return reason
    prefix = f"GPU {gpu['index']} "
    if reason.startswith(prefix):
        return f'{label(gpu)} {reason[len(prefix):]}'
    return f'{reason} ({label(gpu)})'


def _exits(text: str) -> dict[int, int]:
    found = {}
    for line in text.splitlines():
        mark = nvidia_smi.MARK.match(line.strip())
        if mark:
            found[int(mark.group(1))] = int(mark.group(2))
    return found


def _named(collector: assessment._Node, gpu: dict | None) -> None:
    """Every row and finding of one device names its GPU."""
    if not gpu:
        return
    device = f"gpu{gpu['index']}"
    for item in collector.result.rows + collector.result.findings:
        if item.device == device and item.gpu is None:
            item.gpu = dict(gpu)


def inventory(node: str, text: str, want: Expected, rules: dict,
              time_limit_s: int) -> assessment.Assessment:
    """The inventory of one node from its GPUs' answers."""
    collector = assessment._Node(node, rules)
    gpus, _ = nvidia_smi.gpu_sections(text)
    exits = _exits(text)
    seen = {str(g.get('bus_id', '')).upper(): g for g in gpus}
    # a GPU the layout expects but nvidia-smi does not show: named by the
    # index and bus id the layout gives it
    for index, bus_id in enumerate(want.bus_ids):
        # (a GPU that did not answer is named as such below)
        if bus_id not in seen and exits.get(index) != TIMED_OUT:
            gpu = {'index': index, 'bus_id': bus_id, 'serial': None}
            found = collector.state(
                'gpu', f'gpu{index}', 'gpu_missing', 0, 1, 'GPUs',
                f'GPU {index} missing: no GPU at bus {bus_id} (nvidia-smi '
                f'shows {len(gpus)} of {want.count or len(want.bus_ids)})',
                source=want.count_source)
            collector.summary(f'gpu{index}', found, {'bus_id': bus_id})
            _named(collector, gpu)
    if not want.bus_ids and want.count and len(gpus) < want.count:
        found = collector.state(
            'gpu', None, 'gpu_missing', len(gpus), want.count, 'GPUs',
            f'{want.count - len(gpus)} GPU(s) missing: nvidia-smi shows '
            f'{len(gpus)} of {want.count}', source=want.count_source)
        collector.result.findings += found
    for index, status in sorted(exits.items()):
        explained = index >= len(gpus) and status != TIMED_OUT
        if status == 0 or explained:
            continue
        why = (f'did not answer nvidia-smi within {time_limit_s} s'
               if status == TIMED_OUT else
               f'nvidia-smi -q -i {index} exited {status}')
        gpu = {'index': index, 'bus_id': want.bus_ids[index]
               if index < len(want.bus_ids) else None, 'serial': None}
        found = collector.state('gpu', f'gpu{index}', 'gpu_unanswered',
                                status, 0, 'exit status',
                                f'GPU {index} {why}',
                                source=want.count_source)
        collector.summary(f'gpu{index}', found, {'exit_status': status})
        _named(collector, gpu)
    for gpu in gpus:
        device = f"gpu{gpu['index']}"
        found = []
        for field_name, want_mode, metric in (
                ('persistence_mode', want.persistence, 'persistence_mode'),
                ('ecc_mode', want.ecc, 'ecc_mode')):
            have = gpu.get(field_name)
            if want_mode and have and have != want_mode:
                found += collector.state(
                    'gpu', device, metric, 0, 1, 'flag',
                    f"GPU {gpu['index']} {metric.replace('_', ' ')} {have} "
                    f'(expected {want_mode})', source=want.modes_source)
        collector.summary(device, found, {
            key: gpu.get(key) for key in ('name', 'uuid', 'vbios', 'bus_id',
                                          'serial', 'persistence_mode',
                                          'ecc_mode')})
        _named(collector, {'index': gpu['index'], 'bus_id': gpu.get('bus_id'),
                           'serial': gpu.get('serial')})
    for row in collector.result.rows:
        if row.metric == assessment.SUMMARY_METRIC:
            row.metric = INVENTORY_METRIC
    return collector.result


def nvlinks(node: str, status_text: str, smi_text: str, rules: dict,
            nominal: assessment.Nominal) -> assessment.Assessment:
    """Each GPU's NVLinks against the SKU's, every GPU named."""
    collector = assessment._Node(node, rules)
    ids = identities(smi_text)
    by_uuid = {}
    for gpu in nvidia_smi.gpu_sections(smi_text)[0]:
        if gpu.get('uuid'):
            by_uuid[gpu['uuid']] = gpu['index']
    for index, links in sorted(nvlink.parse(status_text.splitlines())
                               .items()):
        index = by_uuid.get(links.uuid, index)
        device = f'gpu{index}'
        found = assessment.nvlink_state(collector, device, index, links,
                                        nominal)
        collector.summary(device, found, {
            'links_active': len(links.active),
            'links_inactive': links.inactive,
            'speeds_gbs': {str(k): v for k, v in sorted(links.speeds.items())},
            'uuid': links.uuid})
        _named(collector, ids.get(index, {'index': index}))
    for row in collector.result.rows:
        if row.metric == assessment.SUMMARY_METRIC:
            row.metric = NVLINK_METRIC
    return collector.result


def diagnostics(node: str, parsed, smi_text: str, rules: dict
                ) -> tuple[assessment.Assessment, list[str], list[str]]:
    """(rows and GPU findings, internal errors of the test, plugins skipped
    on every GPU) of one ``dcgmi diag``."""
    collector = assessment._Node(node, rules)
    ids = identities(smi_text)
    results = parsed.details.get('results', [])
    _, source = assessment._rule(rules, 'gpu', 'dcgm_diag')
    internal, by_plugin = [], {}
    for result in results:
        by_plugin.setdefault(result['plugin'], set()).add(result['status'])
        gpu = result['gpu']
        device = f'gpu{gpu}' if gpu is not None else None
        metric = 'dcgm_' + nvlink.counter_name(result['plugin'])
        reason = dcgmi.describe(result)
        status = result['status']
        if status == dcgmi.INTERNAL:
            internal.append(reason)
        row_result = {dcgmi.PASS: 'pass', dcgmi.FAIL: 'fail',
                      dcgmi.SKIP: 'not_measured'}.get(status, 'informational')
        collector.result.rows.append(assessment.Row(
            node, device, metric, 1.0 if status == dcgmi.FAIL else 0.0,
            'failures', row_result, reference=0, reason=reason
            if status != dcgmi.PASS else '', source=source,
            params={'plugin': result['plugin'],
                    'category': result['category'], 'status': status,
                    'code': result['code'], 'message': result['message']}))
        if status == dcgmi.FAIL and gpu is not None:
            said = reason[len(f'GPU {gpu} '):] \
                if reason.startswith(f'GPU {gpu} ') else reason
            collector.result.findings.append(assessment.Finding(
                node, device, metric, assessment.FAIL,
                f'GPU {gpu} DCGM {said}',
                1.0, 0, source))
        _named(collector, ids.get(gpu, {'index': gpu})
               if gpu is not None else None)
    skipped = sorted(p for p, s in by_plugin.items() if s == {dcgmi.SKIP})
    return collector.result, internal, skipped


def diag_not_measured(parsed, text: str, hint: str) -> str | None:
    """Why a ``dcgmi diag`` measured nothing (a plugin skipped on every GPU
    is not measured, never a pass), or None: every test plugin beyond the
    deployment checks skipped, or no host engine to talk to."""
    results = parsed.details.get('results', [])
    tested = {r['status'] for r in results if r['category'] != 'Deployment'}
    if results and tested <= {dcgmi.SKIP}:
        plugins = sorted({r['plugin'] for r in results
                          if r['category'] != 'Deployment'})
        return ('dcgmi diag: every test plugin was skipped on every GPU '
                '(not measured): ' + (', '.join(plugins) or 'none ran'))
    lowered = text.lower()
    if not results and ('host engine' in lowered or
                        'unable to establish a connection' in lowered):
        first = next((line.strip() for line in text.splitlines()
                      if line.strip()), '')
        return f'dcgmi cannot reach DCGM ({first[:120]}): {hint}'
    return None
