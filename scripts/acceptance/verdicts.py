"""ReFrame's run report -> findings per node -> one verdict per node.

Only a measurement can make a node bad: a metric below its reference, or
the tool itself reporting an error on that node. A check that could not
measure (skipped, tool missing on the node, job not run) is `not_measured`,
never a pass and never a bad node. Pair checks blame a node only when it
failed with two different partners.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from checks.common import measurements, site_baseline
from config.results.rows import judge

from . import health
from .findings import (BAD, FAIL, FLAKY, GOOD, NODE_VERDICTS, NOT_JUDGED,
                       NOT_MEASURED, PASS, POWERED_DOWN, POWERED_DOWN_REASON,
                       PUBLISHED, SUSPECT, WHOLE_PARTITION, Finding)
from .plan import scope_of
from .slurm import is_powered_down, is_usable

# Phases in which the tool ran and its output was judged.
MEASURED_PHASES = {'sanity', 'performance'}
TOOL_MISSING_EXIT = 127  # the job's tool guard (checks/common/external_tool.py)
_PIN_PARAMETER = re.compile(r'\s*%\.?pinned_nodes=\S+')
_SCHEDULER_TROUBLE = ('job scheduler error', 'spawned process error',
                      'cancelled by user', 'aborted due to')
_SKIP_LINE = re.compile(r'\bSKIP\s*\]\s*\(\s*\d+/\d+\)\s.*?/([0-9a-f]{8})\s'
                        r'@\S+\s\[(.*)\]\s*$')


@dataclass
class NodeVerdict:
    node: str
    partition: str
    verdict: str
    findings: list[Finding] = field(default_factory=list)

    def worst_findings(self) -> list[Finding]:
        """What made the verdict: failures (bad/suspect), failures that
        did not repeat (flaky), or gaps."""
        if self.verdict == FLAKY:
            return [f for f in self.findings if f.flaky]
        wanted = {BAD: FAIL, SUSPECT: FAIL, NOT_MEASURED: NOT_MEASURED,
                  POWERED_DOWN: POWERED_DOWN, NOT_JUDGED: NOT_JUDGED}
        verdict = wanted.get(self.verdict)
        return [f for f in self.findings if f.verdict == verdict
                and not f.blamed_on_partner and not f.set_aside]

    @property
    def confirmed(self) -> bool:
        """Bad, and a failure of its own failed again every time it was
        measured again (--confirm): only such a node is drained."""
        return self.verdict == BAD and any(
            f.confirmed for f in self.worst_findings())


def skip_reasons(reframe_output: str) -> dict[str, str]:
    """{test hash: why it was skipped} from ReFrame's console output
    (the run report keeps no skip reason)."""
    reasons = {}
    for line in reframe_output.splitlines():
        match = _SKIP_LINE.search(line)
        if match:
            reasons[match.group(1)] = match.group(2)
    return reasons


def final_cases(report: dict) -> list[dict]:
    """The last attempt of every test case (ReFrame's --max-retries reruns
    failures in later runs), with the number of attempts."""
    latest, attempts = {}, {}
    for run in report.get('runs', []):
        for case in run.get('testcases', []):
            if case.get('fixture'):
                continue
            key = (case.get('display_name'), case.get('system'),
                   case.get('partition'), case.get('environ'))
            latest[key] = case
            attempts[key] = attempts.get(key, 0) + 1
    return [{**case, 'attempts': attempts[key]}
            for key, case in latest.items()]


def scheduler_trouble(cases: list[dict]) -> list[str]:
    """Reasons of failures that come from the scheduler, not a node."""
    return [f"{case.get('display_name')}: {case.get('fail_reason')}"
            for case in cases if case.get('result') in ('fail', 'abort')
            and str(case.get('fail_reason') or '').lower().startswith(
                _SCHEDULER_TROUBLE)]


def check_label(case: dict) -> str:
    return _PIN_PARAMETER.sub('', case.get('display_name') or '').strip()


def class_name(case: dict) -> str:
    """'PerftestPair %benchmark=ib_write_bw' -> 'PerftestPair'."""
    return (case.get('name') or '').split('%')[0].strip()


def case_nodes(case: dict) -> list[str]:
    """Where the case ran: what its job recorded, else where it was
    pinned; ReFrame's own node list only for unpinned cases."""
    return list(case.get('job_nodes') or case.get('pinned_nodes')
                or case.get('job_nodelist') or [])


def _not_measured_reason(case: dict, skipped: dict[str, str]) -> str | None:
    result = case.get('result')
    reason = str(case.get('fail_reason') or '').strip()
    if result == 'skip':
        why = skipped.get(case.get('hashcode') or '')
        return f'skipped: {why}' if why else 'skipped by the check'
    if result != 'fail':
        return None
    if case.get('job_exitcode') == TOOL_MISSING_EXIT or \
            ' not found on node ' in reason:
        return f'tool missing: {reason}'
    if case.get('fail_phase') not in MEASURED_PHASES:
        return f"failed before measuring ({case.get('fail_phase')}): {reason}"
    if case.get('pinned_nodes') and not case.get('job_nodes'):
        # Its first line records the nodes: the job script never started
        # (still pending at --max-pending, cancelled, refused by Slurm).
        return f'the job never ran on the node: {reason}'
    return None


def fanned_groups(case: dict) -> list[str]:
    """The nodes or pairs ('a+b') a case measured one by one in one job
    (checks/common/fan_out_results.py), whose findings are per group; [] for a
    one-node or one-pair case."""
    return list(case.get('fanned_groups') or [])


def fanned_out(case: dict) -> bool:
    return bool(fanned_groups(case))


def _places(case: dict, scope: str) -> list[tuple[str, str | None, str]]:
    """(node, partner, group) for every node a case measured; group '' for
    a one-node or one-pair case."""
    groups = fanned_groups(case)
    if not groups:
        nodes = case_nodes(case)
        return [(node, next((n for n in nodes if n != node), None)
                 if scope == 'pair' else None, '') for node in nodes]
    places = []
    for group in groups:
        members = group.split('+')
        places += [(node, next((n for n in members if n != node), None)
                    if scope == 'pair' else None, group)
                   for node in members]
    return places


def _group_outcome(case: dict, group: str) -> tuple[str | None, str | None]:
    """(why its output failed sanity, why it measured nothing) for one
    node or pair of a batch case; (None, None) for a one-node case."""
    if not group:
        return None, None
    return ((case.get('group_failures') or {}).get(group),
            (case.get('groups_not_measured') or {}).get(group))


def _metric_findings(case: dict, base: dict, group: str) -> list[Finding]:
    found = []
    group_of = case.get('metric_groups') or {}
    for key, info in (case.get('perfvalues') or {}).items():
        value, ref, lower, upper, unit, result = (list(info) + [None] * 6)[:6]
        metric, measured = measurements.split_group(key.split(':')[-1],
                                                    group_of)
        if group_of and measured != group:
            continue   # another node's or pair's value of a batch case
        verdict = judge.perf_result(result, ref, lower, upper)
        found.append(Finding(**base, verdict=verdict or PASS,
                             metric=metric, value=value,
                             unit=unit, reference=ref,
                             basis=PUBLISHED if verdict in (PASS, FAIL)
                             else None,
                             reason=_bound_missed(value, ref, lower, upper)
                             if verdict == FAIL else ''))
    return found


def _bound_missed(value, ref, lower, upper) -> str:
    """Which ReFrame bound (a fraction of the reference) the value missed."""
    if None in (value, ref):
        return 'outside the reference'
    low, high = judge.bounds(ref, lower, upper)
    if low is not None and value < low:
        return f'below the lower bound {low:g}'
    if high is not None and value > high:
        return f'above the upper bound {high:g}'
    return 'outside the reference'


def failed_on_site_baseline(case: dict) -> bool:
    """Whether the case failed on the site baseline alone
    (checks/common/site_baseline_verdicts.py): judged per metric from its rows
    after the run (compare.baseline_judgements), not one failure per node."""
    return case.get('fail_phase') == 'performance' and \
        f'{site_baseline.LABEL}: ' in str(case.get('fail_reason') or '')


def case_findings(case: dict, skipped: dict[str, str]) -> list[Finding]:
    """One finding per node (and metric) of one test case."""
    scope = scope_of(class_name(case))
    if scope in ('set', 'whole') or not case.get('pinned_nodes'):
        scope, places = 'whole', [(WHOLE_PARTITION, None, '')]
    else:
        places = _places(case, scope)
    base = {'partition': f"{case.get('system')}:{case.get('partition')}",
            'check': check_label(case), 'scope': scope,
            'jobid': case.get('jobid'), 'attempts': case.get('attempts', 1)}
    found = []
    for node, partner, group in places:
        where = {**base, 'node': node, 'partner': partner}
        failed, missing = _group_outcome(case, group)
        missing = missing or (None if failed else
                              _not_measured_reason(case, skipped))
        if missing:
            found.append(Finding(**where, verdict=NOT_MEASURED,
                                 reason=missing))
            continue
        metrics = [] if failed else _metric_findings(case, where, group)
        if failed:
            # the tool ran on this node and its output failed sanity
            metrics.append(Finding(**where, verdict=FAIL, reason=failed))
        elif case.get('result') == 'fail' and not any(
                f.verdict == FAIL for f in metrics) and \
                not (group and metrics) and \
                not failed_on_site_baseline(case):
            # the tool ran and reported an error (sanity)
            metrics.append(Finding(**where, verdict=FAIL, reason=str(
                case.get('fail_reason') or 'failed').strip()))
        elif not metrics:
            metrics.append(Finding(**where, verdict=PASS))
        if case.get('attempts', 1) > 1:
            for finding in metrics:
                finding.reason = (finding.reason + f" (attempt "
                                  f"{finding.attempts})").strip()
        found += metrics
    # health around the run (scripts/acceptance/health.py)
    health.name_concurrent(found, case)
    return found + health.node_findings(case, base)


def _pair_blame(findings: list[Finding]) -> tuple[set, set]:
    """(bad, suspect) nodes from pair checks: bad when a check failed with
    two different partners; suspect when it failed with one partner that
    is not bad itself (the pair cannot say which of the two it is)."""
    partners: dict[tuple, set] = {}
    findings = [f for f in findings if not f.set_aside]
    for f in findings:
        if f.scope == 'pair' and f.verdict == FAIL and f.partner:
            partners.setdefault((f.partition, f.check, f.node), set()).add(
                f.partner)
    bad = {(part, node) for (part, _, node), p in partners.items()
           if len(p) >= 2}
    suspect = set()
    for f in findings:
        if f.scope == 'pair' and f.verdict == FAIL and f.partner:
            if (f.partition, f.node) in bad:
                continue
            if (f.partition, f.partner) in bad:
                f.blamed_on_partner = True
            else:
                suspect.add((f.partition, f.node))
    return bad, suspect


def node_verdicts(findings: list[Finding], nodes: dict[str, dict[str, str]]
                  ) -> list[NodeVerdict]:
    """A verdict for every node of every partition, worst first.

    ``nodes``: {partition: {node: Slurm state}}; a node that cannot run
    jobs, or that no check reached, is not measured."""
    pair_bad, pair_suspect = _pair_blame(findings)
    by_node: dict[tuple, list[Finding]] = {}
    for f in findings:
        if f.node != WHOLE_PARTITION:
            by_node.setdefault((f.partition, f.node), []).append(f)
    verdicts = []
    for partition, states in nodes.items():
        for node, state in states.items():
            found = by_node.pop((partition, node), [])
            if state is not None and is_powered_down(state):
                if not found:  # else started for this run (--power-up)
                    found.append(Finding(node, partition, '(powered down)',
                                         POWERED_DOWN,
                                         reason=POWERED_DOWN_REASON))
            elif state is not None and not is_usable(state):
                found.append(Finding(node, partition, '(all checks)',
                                     NOT_MEASURED, reason=f'Slurm state '
                                     f'{state}: no job can run there'))
            elif not found:
                found.append(Finding(node, partition, '(all checks)',
                                     NOT_MEASURED,
                                     reason='no check reached this node'))
            verdicts.append(NodeVerdict(node, partition, _verdict(
                (partition, node), found, pair_bad, pair_suspect), found))
    # nodes the scheduler did not list (e.g. non-Slurm partitions)
    for (partition, node), found in by_node.items():
        verdicts.append(NodeVerdict(node, partition, _verdict(
            (partition, node), found, pair_bad, pair_suspect), found))
    order = {v: i for i, v in enumerate(NODE_VERDICTS)}
    return sorted(verdicts, key=lambda v: (order[v.verdict], v.partition,
                                           v.node))


def _verdict(key, found, pair_bad, pair_suspect) -> str:
    if key in pair_bad or any(f.verdict == FAIL and f.scope == 'node'
                              and not f.set_aside for f in found):
        return BAD
    if key in pair_suspect:
        return SUSPECT
    if any(f.flaky for f in found):
        return FLAKY
    if any(f.verdict == NOT_JUDGED for f in found):
        return NOT_JUDGED
    if any(f.verdict == NOT_MEASURED for f in found):
        return NOT_MEASURED
    if any(f.verdict == POWERED_DOWN for f in found):
        return POWERED_DOWN
    return GOOD


def partition_findings(findings: list[Finding]) -> list[Finding]:
    """Failures and gaps of checks that ran once per partition."""
    return [f for f in findings if f.node == WHOLE_PARTITION
            and f.verdict in (FAIL, NOT_MEASURED)]
