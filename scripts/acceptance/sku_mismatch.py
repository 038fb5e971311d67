"""A node that is another VM size than its partition declares: one finding
per node, from what each node of its jobs recorded (a batch job's
``vm_sku_mismatches`` name every such node; checks/common/vm_size.py). Its
results were informational, so the node is not measured against its
partition's references, never bad."""
from __future__ import annotations

from .findings import NOT_MEASURED, Finding
from .verdicts import case_nodes, check_label


def findings(cases: list[dict]) -> list[Finding]:
    found: dict[tuple[str, str], Finding] = {}
    for case in cases:
        nodes = case_nodes(case)
        partition = f"{case.get('system')}:{case.get('partition')}"
        for node, reason in (case.get('vm_sku_mismatches') or {}).items():
            node = node if node != '?' else (nodes or ['?'])[0]
            found.setdefault((partition, node), Finding(
                node, partition, check_label(case), NOT_MEASURED,
                reason=f'{reason}: its results are informational (set the '
                       'family of the partition, or move the node)',
                jobid=case.get('jobid')))
    return list(found.values())
