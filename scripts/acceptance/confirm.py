"""Re-measure before blame (`--confirm N`, 1 by default): the checks a
node failed on any basis run again in a pinned session of their own, one
job per node (the node alone, not beside the batch that may have disturbed
it), up to N times, and the node is bad only if it fails every attempt; a
failure that does not repeat is *flaky* (findings.PASSED_AGAIN): recorded
and shown, never drained or reported. Peer failures are known only
after a session, so ReFrame's own retries (--retry-failed) cannot
re-measure them; this can. The new value is held against the same
peers (their median and spread from the first run) and the same baseline
and published reference; each attempt's verdict is kept on the finding.

A peer failure is re-measured beside up to CONTROLS nodes that passed the
same checks (its *controls*): the re-run must fail against the first run's
peers and also at the controls' level, value x (the peers' first median /
the controls' median now), so that a host or fabric that ran slower for a
while (it moves every node alike) is not held against the node. Where a partition
measures one node at a time (the extra ``nodes_measured_at_once`` = 1:
the sandbox's nodes share one host's cores), the session's jobs run one
after the other (ReFrame's serial execution policy).

A node bad from pair checks (it failed with two partners) re-runs its
failing pair checks with a partner that passed (repair.py's choice): it is
bad only if it fails with that partner too, every attempt; when it passes,
its pair failures (and their partners' side of the same runs) are set
aside."""
from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field

from . import compare, plan, repair, verdicts
from .findings import GOOD, NOT_JUDGED, PASSED_AGAIN, PEERS

PASSED = PASSED_AGAIN
#: good nodes measured again beside the nodes their peers flagged
CONTROLS = 2
#: ReFrame's options for a session whose jobs must run one at a time
ONE_AT_A_TIME = ['--exec-policy', 'serial']
#: The partner's side of a pair run that its node then passed with a good
#: partner: not that partner's failure (and it is not flaky for it).
PARTNER_PASSED = 'its partner passed when measured again'


def _failing(node_verdicts, scope: str = 'node'
             ) -> dict[str, dict[str, list]]:
    """{partition: {node: [its failing *scope* findings]}} of bad nodes."""
    wanted: dict[str, dict[str, list]] = defaultdict(dict)
    for v in node_verdicts:
        if v.verdict != verdicts.BAD:
            continue
        found = [f for f in v.findings if f.verdict == verdicts.FAIL
                 and f.scope == scope and not f.set_aside]
        if found:
            wanted[v.partition][v.node] = found
    return wanted


def _controls(partition: str, classes, judged, findings, flagged
              ) -> list[str]:
    """Up to CONTROLS nodes of *partition* that are neither bad nor
    suspect and measured every one of *classes* without failing."""
    fine = {v.node for v in judged if v.partition == partition
            and v.verdict in (GOOD, NOT_JUDGED)} - set(flagged)
    measured = defaultdict(set)
    for f in findings:
        if f.partition == partition and f.node in fine and \
                f.scope == 'node' and \
                f.verdict not in (verdicts.FAIL, verdicts.NOT_MEASURED):
            measured[f.node].add(verdicts.class_name({'name': f.check}))
    return [n for n in sorted(measured)
            if set(classes) <= measured[n]][:CONTROLS]


def _level_now(old: verdicts.Finding, new: list[verdicts.Finding],
               controls: list[str]) -> float | None:
    """The median of what *old*'s controls measured again."""
    values = [f.value for f in new if f.node in controls
              and f.check == old.check and f.metric == old.metric
              and f.value is not None and f.verdict != verdicts.NOT_MEASURED]
    return statistics.median(values) if values else None


def _fails_again(first: compare.Decided, value: float,
                 now: float | None) -> bool:
    """Whether a re-measured *value* still fails on *first*'s basis; for a
    peer failure with controls (*now*: their median), both against the
    first run's peers and at their level (value x first median / now): a
    drift that moved every node alike confirms nothing, and with none
    this never confirms more than the first run's peers alone would."""
    if not first.still_fails(value):
        return False
    if first.basis != PEERS or not now or not first.reference:
        return True
    return first.still_fails(value * first.reference / now)


def _now_fails(old: verdicts.Finding, new: list[verdicts.Finding],
               decided: dict[str, compare.Decided], now: float | None = None
               ) -> tuple[bool, str]:
    """Whether the re-measured check still fails where *old* failed
    (*now*: its controls' median, where it has controls)."""
    same = [f for f in new if f.check == old.check and f.node == old.node
            # a check that failed as a whole (sanity) against all it measured
            and (old.metric is None or f.metric == old.metric)]
    if not same:
        return True, 'not measured'
    if any(f.verdict == verdicts.FAIL for f in same):
        return True, verdicts.FAIL
    if any(f.verdict == verdicts.NOT_MEASURED for f in same):
        return True, 'not measured'
    first = decided.get(old.record_id)
    value = next((f.value for f in same if f.value is not None), None)
    beside = f', its controls {now:g}' if now else ''
    if first is not None and first.still_fails is not None and \
            value is not None and _fails_again(first, value, now):
        return True, f'{verdicts.FAIL} ({first.basis}: {value:g}{beside})'
    return False, verdicts.PASS + (f' ({value:g}{beside})'
                                   if beside and value is not None else '')


def _still_failing(old: verdicts.Finding, new: list[verdicts.Finding],
                   decided: dict[str, compare.Decided], rows: list[dict],
                   now: float | None = None) -> list[compare.Decided]:
    """A failure decided after the run (peers, siblings) that failed
    again: a verdict about the confirmation's own row, held against what
    the first run held it against (so that the store's latest run of the
    node says it failed, as acceptance does)."""
    first = decided.get(old.record_id)
    if first is None or first.still_fails is None or \
            first.basis == verdicts.PUBLISHED:
        return []
    by_record = {row['record_id']: row for row in rows}
    found = []
    for f in new:
        row = by_record.get(f.record_id)
        if row is None or f.check != old.check or f.node != old.node or \
                f.metric != old.metric or f.value is None or \
                not _fails_again(first, f.value, now):
            continue
        unit = f' {f.unit}' if f.unit else ''
        beside = f' beside its controls (their median {now:,.6g}{unit})' \
            if now and first.basis == PEERS else ' alone'
        found.append(compare.Decided(
            row, first.basis, True,
            f'measured again{beside}: {f.value:,.6g}{unit}, still failing '
            f'against the first run ({first.reason})', first.reference,
            first.still_fails, verdicts.FAIL))
    return found


def _classes(targets: dict[str, list]) -> list[str]:
    return sorted({verdicts.class_name({'name': f.check})
                   for found in targets.values() for f in found})


def _nodes_by_classes(targets: dict[str, list]) -> list[tuple]:
    """[(classes, nodes)]: the nodes that failed the same checks."""
    groups = {}
    for node, found in sorted(targets.items()):
        groups.setdefault(tuple(_classes({node: found})), []).append(node)
    return sorted(groups.items())


def _pair_phase(partition: str, targets: dict[str, list], judged,
                findings: list, attempt: int, say) -> plan.Phase | None:
    """Each bad node with a good partner it has not failed with, for its
    failing pair checks."""
    pins = []
    for node, found in sorted(targets.items()):
        partner = repair.good_partner(partition, judged, findings,
                                      set(targets) | {f.partner for f in found})
        if partner is None:
            say(f'{partition}: no good partner to confirm {node} with')
            continue
        pins.append(tuple(sorted((node, partner))))
    if not pins:
        return None
    system, _, name = partition.partition(':')
    say(f'confirming {len(pins)} node(s) of {partition} with a good partner '
        f'(attempt {attempt}): {", ".join(",".join(p) for p in pins)}')
    return plan.Phase(system, name, 'pair', pins,
                      names=tuple(_classes(targets)),
                      tag=f'confirm-pairs-{attempt}', rerun=True)


def _set_aside_pair(old: verdicts.Finding, findings: list) -> None:
    """The partner's side of the run that *old* failed passes with it."""
    for f in findings:
        if f.scope == 'pair' and f.node == old.partner and \
                f.partner == old.node and f.check == old.check and \
                f.jobid == old.jobid and f.verdict == verdicts.FAIL:
            f.set_aside = PARTNER_PASSED


@dataclass
class Cost:
    """What confirming took: node-seconds (each session's wall time times
    the nodes it held), sessions, and the nodes measured again."""
    node_seconds: float = 0.0
    sessions: int = 0
    nodes: set = field(default_factory=set)

    def add(self, phase: plan.Phase, seconds: float) -> None:
        held = {node for pin in phase.pins for node in pin}
        self.node_seconds += seconds * len(held)
        self.sessions += 1
        self.nodes |= held

    def line(self) -> str:
        return (f'confirming cost {self.node_seconds / 60:.1f} node-minutes: '
                f'{len(self.nodes)} node(s) measured again, '
                f'{self.sessions} session(s)')

    def as_dict(self) -> dict:
        return {'node_seconds': round(self.node_seconds, 1),
                'sessions': self.sessions, 'nodes': sorted(self.nodes)}


def timed(run_phase, cost: Cost, clock=time.monotonic):
    """run_phase, adding what each session held to *cost*."""
    def run(phase):
        start = clock()
        try:
            return run_phase(phase)
        finally:
            cost.add(phase, clock() - start)
    return run


def confirm(attempts: int, findings: list, decided: list, nodes: dict,
            run_phase, measure, say, cost: Cost | None = None,
            one_at_a_time: frozenset = frozenset()) -> list:
    """Run up to *attempts* confirmation sessions; set aside the failures
    that pass (flaky). ``run_phase(phase) -> PhaseResult``;
    ``measure(results) -> (findings, decided, rows)`` judges a
    confirmation's rows. Returns the decisions of the confirmation runs
    (for their verdict rows); *cost* gathers the node-time it took;
    *one_at_a_time*: the partitions whose node sessions run their jobs one
    after the other."""
    by_record = {d.row['record_id']: d for d in decided if d.fail}
    run_phase = timed(run_phase, cost if cost is not None else Cost())
    more = []
    for attempt in range(1, attempts + 1):
        judged = verdicts.node_verdicts(findings, nodes)
        wanted, pairs = _failing(judged), _failing(judged, 'pair')
        if not wanted and not pairs:
            break
        results, controls = [], {}
        for partition, targets in sorted(wanted.items()):
            system, _, name = partition.partition(':')
            # each node runs again only the checks it failed: one session
            # per set of checks
            groups = _nodes_by_classes(targets)
            for number, (classes, group) in enumerate(groups, 1):
                tag = f'confirm-{attempt}' + (
                    f'-{number}' if len(groups) > 1 else '')
                say(f'confirming {len(group)} node(s) of {partition} '
                    f'(attempt {attempt} of {attempts}): '
                    f'{", ".join(classes)} on {", ".join(group)}')
                beside = []
                if any(f.basis == PEERS for n in group for f in targets[n]):
                    beside = _controls(partition, classes, judged, findings,
                                       targets)
                if beside:
                    say(f'  beside {", ".join(beside)} (controls: what '
                        'their peers measure now)')
                controls.update({(partition, n): beside for n in group})
                results.append(run_phase(plan.Phase(
                    system, name, 'node', [(n,) for n in group + beside],
                    names=classes, tag=tag, rerun=True,
                    options=ONE_AT_A_TIME if name in one_at_a_time else [])))
        for partition, targets in sorted(pairs.items()):
            phase = _pair_phase(partition, targets, judged, findings,
                                attempt, say)
            if phase is not None:
                results.append(run_phase(phase))
        if not results:
            break
        new, new_decided, rows = measure(results)
        more += new_decided
        for targets in [*wanted.values(), *pairs.values()]:
            for found in targets.values():
                for old in found:
                    now = _level_now(old, new, controls.get(
                        (old.partition, old.node), [])) \
                        if old.basis == PEERS else None
                    fails, what = _now_fails(old, new, by_record, now)
                    old.confirmations.append(what)
                    more += _still_failing(old, new, by_record, rows, now)
                    if not fails:
                        old.set_aside = PASSED
                        _set_aside_pair(old, findings)
    return more
