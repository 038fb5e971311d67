"""A node that is another VM size than its partition declares: one finding
per node, from what its jobs recorded (checks/common/vm_size.py). Its
results were informational, so the node is not measured against its
partition's references, never bad."""
from __future__ import annotations

from .verdicts import NOT_MEASURED, Finding, case_nodes, check_label


def findings(cases: list[dict]) -> list[Finding]:
    found: dict[tuple[str, str], Finding] = {}
    for case in cases:
        reason = case.get('vm_sku_mismatch')
        nodes = case_nodes(case)
        if not reason or not nodes:
            continue
        partition = f"{case.get('system')}:{case.get('partition')}"
        key = (partition, nodes[0])
        found.setdefault(key, Finding(
            nodes[0], partition, check_label(case), NOT_MEASURED,
            reason=f'{reason}: its results are informational (set the '
                   'family of the partition, or move the node)',
            jobid=case.get('jobid')))
    return list(found.values())
