"""The GPUs of ``nvidia-smi -q`` (its text form): what names each GPU and
what the inventory judges.

The text is one '==============NVSMI LOG==============' block (several
where the inventory asks each GPU on its own, ``nvidia-smi -q -i N``), with
'Attached GPUs : 8' and one 'GPU 00000000:18:00.0' section per GPU shown;
fields nest by indentation ('Ecc Mode' > 'Current'). A GPU's index is its
place in the output (nvidia-smi numbers GPUs in PCI bus order), or the
``-i N`` the inventory's marker line names.

Metrics: ``gpu_count`` (sections), ``attached_gpus`` (what the driver
says), ``persistence_enabled`` and ``ecc_enabled`` (GPUs), and the
``retired_pages_pending`` and ``remapped_rows_pending`` GPUs. ``ok`` is
False on text without an NVSMI log or a GPU section, and on an elided
excerpt ('[...]' lines). Reads each line once.
"""
from __future__ import annotations

import re

from .base import Metric, failure, success

TOOL = 'nvidia-smi'

HEADER = '==============NVSMI LOG=============='
_GPU = re.compile(r'^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.'
                  r'[0-9A-Fa-f])\s*$')
#: the inventory's marker before each GPU's answer (checks/gpu/inventory.py)
MARK = re.compile(r'^##clusterproof-gpu (\d+) exit (\d+)\s*$')
FIELDS = {'Product Name': 'name', 'Serial Number': 'serial',
          'GPU UUID': 'uuid', 'VBIOS Version': 'vbios',
          'Persistence Mode': 'persistence_mode', 'Minor Number': 'minor',
          'Module ID': 'module_id', 'Ecc Mode.Current': 'ecc_mode',
          'PCI.Bus Id': 'bus_id',
          'Retired Pages.Pending Page Blacklist': 'retired_pages_pending',
          'Retired Pages.Pending Page Retirement': 'retired_pages_pending',
          'Remapped Rows.Pending': 'remapped_rows_pending'}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(' '))


def gpu_sections(text: str) -> tuple[list[dict], dict]:
    """([{field: value} per GPU, in order], {'driver_version', 'cuda_version',
    'attached_gpus', 'logs'})."""
    gpus: list[dict] = []
    node: dict = {'logs': 0}
    current = None
    path: list[tuple[int, str]] = []   # (indent, heading) above a field
    index_hint = None
    node['elided'] = 0
    for raw in text.splitlines():
        line = raw.rstrip('\r\n').rstrip()
        if line.strip() in ('[...]', '...'):
            node['elided'] += 1
            continue
        mark = MARK.match(line)
        if mark:
            index_hint, current = int(mark.group(1)), None
            continue
        if line.strip() == HEADER:
            node['logs'] += 1
            current = None
            continue
        gpu = _GPU.match(line)
        if gpu:
            current = {'pci': gpu.group(1)}
            if index_hint is not None:
                current['index'] = index_hint
                index_hint = None
            gpus.append(current)
            path = []
            continue
        if not line.strip():
            continue
        name, colon, value = line.strip().partition(':')
        name = name.strip()
        if current is None:
            if colon and _indent(line) == 0:
                node[name] = value.strip()
            continue
        indent = _indent(line)
        if indent == 0:          # a line of something else: the GPU ends
            current = None
            continue
        while path and path[-1][0] >= indent:
            path.pop()
        if not colon:            # a heading ('Ecc Mode')
            path.append((indent, name))
            continue
        key = '.'.join([p for _, p in path] + [name])
        field = FIELDS.get(key)
        if field and field not in current:
            current[field] = value.strip()
    facts = {'driver_version': node.get('Driver Version'),
             'cuda_version': node.get('CUDA Version'),
             'attached_gpus': node.get('Attached GPUs'),
             'logs': node['logs'], 'elided': node['elided']}
    for place, gpu in enumerate(gpus):
        gpu.setdefault('index', place)
        gpu['bus_id'] = gpu.pop('pci')
    return gpus, facts


def _enabled(value: str | None) -> bool:
    return (value or '').strip().lower() == 'enabled'


def _yes(value: str | None) -> bool:
    return (value or '').strip().lower() == 'yes'


def parse(text: str):
    gpus, facts = gpu_sections(text)
    if not facts['logs'] and not gpus:
        return failure(TOOL, f"not nvidia-smi output: no -q '{HEADER}' and "
                       "no 'GPU 00000000:18:00.0' section")
    if not gpus:
        return failure(TOOL, 'nvidia-smi -q showed no GPU section (cut '
                       'short, or no GPU answered)', details=facts)
    metrics = {
        'gpu_count': Metric(float(len(gpus)), 'GPUs'),
        'persistence_enabled': Metric(float(sum(
            _enabled(g.get('persistence_mode')) for g in gpus)), 'GPUs'),
        'ecc_enabled': Metric(float(sum(
            _enabled(g.get('ecc_mode')) for g in gpus)), 'GPUs'),
        'retired_pages_pending': Metric(float(sum(
            _yes(g.get('retired_pages_pending')) for g in gpus)), 'GPUs'),
        'remapped_rows_pending': Metric(float(sum(
            _yes(g.get('remapped_rows_pending')) for g in gpus)), 'GPUs'),
    }
    attached = facts.get('attached_gpus')
    if attached and attached.isdigit():
        metrics['attached_gpus'] = Metric(float(attached), 'GPUs')
    details = {**{k: v for k, v in facts.items() if v is not None},
               'gpus': gpus}
    if facts['elided']:
        return failure(TOOL, f"the output is elided ({facts['elided']} "
                       "'[...]' line(s)): not the whole of nvidia-smi -q",
                       metrics, details)
    return success(TOOL, metrics, details)
