"""Health findings in acceptance (checks/common/health_sampling.py and the
GPU node checks, checks/gpu/gpu_node.py, put them in the run report, per
node): a finding of class 'fail' (a new link_downed, a new DBE, an XID of
the error class, a link below its rate, a GPU missing...) makes its node
bad with its reason, which names the GPU by index, bus id and serial where
it is about one, whatever the benchmark measured; every finding of
a node, 'warn' ones included (thermal slowdown), is named in the verdict of
the check that failed beside it."""
from __future__ import annotations

from checks.health.gpu_node import named_reason

from .findings import FAIL, WHOLE_PARTITION, Finding

SEVERITY_FAIL = 'fail'


def _by_node(case: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for entry in case.get('health_findings') or []:
        if isinstance(entry, dict) and entry.get('node'):
            found.setdefault(entry['node'], []).append(entry)
    return found


def node_findings(case: dict, base: dict) -> list[Finding]:
    """One failing finding per health finding of class 'fail'. Its reason
    says it all (device, counter, change), so a drain names it, not a
    metric against a reference."""
    where = {k: v for k, v in base.items() if k != 'scope'}
    return [Finding(**where, node=node, scope='node', verdict=FAIL,
                    value=entry.get('value'),
                    reference=entry.get('reference'),
                    reason='health: ' + named_reason(
                        str(entry.get('reason')), entry.get('gpu')),
                    kind=str(entry.get('metric') or ''),
                    device=entry.get('device'),
                    gpu=entry.get('gpu') or None)
            for node, entries in _by_node(case).items()
            for entry in entries if entry.get('severity') == SEVERITY_FAIL]


def _note(finding: Finding, notes: str) -> None:
    if '; health: ' not in finding.reason and \
            not finding.reason.startswith('health: '):
        finding.reason = f'{finding.reason}; health: {notes}'.lstrip('; ')


def name_concurrent_after(findings: list[Finding], cases: list[dict]) -> None:
    """The same for the verdicts decided after the sessions (peers, site
    baseline): a failing finding names the health findings of its job on
    its node."""
    by_job: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        for node, entries in _by_node(case).items():
            by_job.setdefault((str(case.get('jobid')), node), []).extend(
                str(e.get('reason')) for e in entries)
    for finding in findings:
        notes = by_job.get((str(finding.jobid), finding.node))
        if finding.verdict == FAIL and notes:
            _note(finding, '; '.join(notes))


def name_concurrent(found: list[Finding], case: dict) -> None:
    """'below the lower bound 8000' -> '...; during the run: GPU 0 hw
    thermal slowdown active during the run' (every node of a check that
    ran once over the partition)."""
    by_node = _by_node(case)
    for finding in found:
        if finding.verdict != FAIL:
            continue
        entries = [e for node, es in by_node.items() for e in es] \
            if finding.node == WHOLE_PARTITION else by_node.get(finding.node)
        if entries:
            notes = '; '.join(f"{e.get('node')} {e.get('reason')}"
                              if finding.node == WHOLE_PARTITION
                              else str(e.get('reason')) for e in entries)
            _note(finding, notes)
