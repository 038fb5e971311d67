"""Health around every test: the node probe (node_probe.sh, run on each
node of the job before and after the benchmark: node_probe.py) writes one
file per node and phase into SAMPLES_DIR; here they are read, once, and
turned into rows, findings and each node's fingerprint (checks/health/).

Nothing here may fail a job: the probe always exits 0, a source it cannot
read is written down as not available, and reading the samples never raises.
"""
from __future__ import annotations

import os
import time
from typing import NamedTuple

from ..health import assessment, dump, fingerprint, rules

#: Where the node probe writes PHASE.NODE.txt for each node and phase.
SAMPLES_DIR = 'clusterproof_health'
FINGERPRINTS_DIR = 'clusterproof_fingerprints'
# One ReFrame run: the fingerprint is read once per node within it.
RUN_TOKEN = f'{time.strftime("%Y%m%dT%H%M%S")}-{os.getpid()}'
# (node, reason) already stored as not available in this ReFrame run: a
# node without GPU tools says so once, not in every test.
_NOTED_UNAVAILABLE: set[tuple[str, str]] = set()


def once_per_run(rows: list[assessment.Row]) -> list[assessment.Row]:
    kept = []
    for row in rows:
        if row.metric == assessment.NOT_AVAILABLE_METRIC:
            key = (row.node, row.reason)
            if key in _NOTED_UNAVAILABLE:
                continue
            _NOTED_UNAVAILABLE.add(key)
        kept.append(row)
    return kept


def _read(path: str, binary: bool = False):
    try:
        with open(path, 'rb' if binary else 'r',
                  **({} if binary else {'errors': 'replace'})) as fp:
            return fp.read()
    except OSError:
        return None


def samples_of(directory: str) -> dict[str, dict]:
    """{node: {'before': Dump|None, 'after': Dump|None, 'kvp': bytes}}"""
    found: dict[str, dict] = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return found
    for name in names:
        phase, _, node = name.partition('.')
        if phase in ('before', 'after') and node.endswith('.txt'):
            text = _read(os.path.join(directory, name))
            entry = found.setdefault(node[:-4], {})
            entry[phase] = dump.split(text) if text is not None else None
        elif phase == 'kvp_pool_3':
            found.setdefault(node, {})['kvp'] = _read(
                os.path.join(directory, name), binary=True)
    return found


def as_job_nodes(samples: dict, job_nodes: list[str]) -> dict:
    """Samples under the names the job recorded: a node samples itself as
    its short host name where no Slurm name is set (PBS), and
    $PBS_NODEFILE may hold the full one."""
    full = {node.split('.')[0]: node for node in job_nodes}
    return {node if node in job_nodes else full.get(node, node): entry
            for node, entry in samples.items()}



class Health(NamedTuple):
    """What the samples of a job say: the findings, the rows they add,
    node -> its findings in words, node -> its fingerprint columns."""
    findings: list[dict]
    rows: list[dict]
    notes: dict[str, str]
    fingerprints: dict[str, dict]


def assess(samples: dict, job_nodes: list[str], vm_sku: str | None,
           nccl_version: str | None) -> Health:
    """The job's samples (samples_of, under the job's names: as_job_nodes),
    judged; never raises on a sample missing or unreadable."""
    nodes = list(dict.fromkeys(list(job_nodes) + sorted(samples)))
    shipped_rules, nominal = rules.load(), rules.nominal(vm_sku)
    findings, rows, prints = [], [], {}
    for node in nodes:
        entry = samples.get(node, {})
        result = assessment.assess(node, entry.get('before'),
                              entry.get('after'), shipped_rules, nominal)
        findings += [f.as_dict() for f in result.findings]
        rows += [dict(row.__dict__) for row in once_per_run(result.rows)]
        if entry.get('before') is not None:
            prints[node] = fingerprint.of_node(entry['before'],
                                               entry.get('kvp'))
    for columns in prints.values():
        columns['nccl_version'] = nccl_version
    if prints:
        prints['*'] = fingerprint.of_rows(prints, nodes)
    notes: dict[str, list[str]] = {}
    for finding in findings:
        notes.setdefault(finding['node'], []).append(finding['reason'])
    return Health(findings, rows,
                  {node: '; '.join(reasons) for node, reasons in notes.items()},
                  prints)
