"""Re-measure before blame (`--confirm N`): the checks a node failed on any
basis run again in a pinned session of their own, up to N times, and the
node is bad only if it fails every attempt. Peer and baseline failures are
known only after a session, so ReFrame's own retries (--retry-failed)
cannot re-measure them; this can. The new value is held against the same
peers (their median and spread from the first run) and the same baseline
and published reference; each attempt's verdict is kept on the finding."""
from __future__ import annotations

from collections import defaultdict

from . import judge, plan, verdicts

PASSED = 'passed when measured again'


def _failing(node_verdicts) -> dict[str, dict[str, list]]:
    """{partition: {node: [its failing node-scope findings]}} of bad nodes."""
    wanted: dict[str, dict[str, list]] = defaultdict(dict)
    for v in node_verdicts:
        if v.verdict != verdicts.BAD:
            continue
        found = [f for f in v.findings if f.verdict == verdicts.FAIL
                 and f.scope == 'node' and not f.set_aside]
        if found:
            wanted[v.partition][v.node] = found
    return wanted


def _now_fails(old: verdicts.Finding, new: list[verdicts.Finding],
               decided: dict[str, judge.Decided]) -> tuple[bool, str]:
    """Whether the re-measured check still fails where *old* failed."""
    same = [f for f in new if f.check == old.check
            and f.metric == old.metric and f.node == old.node]
    if not same:
        return True, 'not measured'
    if any(f.verdict == verdicts.FAIL for f in same):
        return True, verdicts.FAIL
    if any(f.verdict == verdicts.NOT_MEASURED for f in same):
        return True, 'not measured'
    first = decided.get(old.record_id)
    value = next((f.value for f in same if f.value is not None), None)
    if first is not None and first.still_fails is not None and \
            value is not None and first.still_fails(value):
        return True, f'{verdicts.FAIL} ({first.basis}: {value:g})'
    return False, verdicts.PASS


def confirm(attempts: int, findings: list, decided: list, nodes: dict,
            run_phase, measure, say) -> list:
    """Run up to *attempts* confirmation sessions; set aside the failures
    that pass. ``run_phase(phase) -> PhaseResult``; ``measure(results) ->
    (findings, decided)`` judges a confirmation's rows. Returns the
    decisions of the confirmation runs (for their verdict rows)."""
    by_record = {d.row['record_id']: d for d in decided}
    more = []
    for attempt in range(1, attempts + 1):
        wanted = _failing(verdicts.node_verdicts(findings, nodes))
        if not wanted:
            break
        results = []
        for partition, targets in sorted(wanted.items()):
            system, _, name = partition.partition(':')
            classes = sorted({verdicts.class_name({'name': f.check})
                              for found in targets.values() for f in found})
            say(f'confirming {len(targets)} node(s) of {partition} '
                f'(attempt {attempt} of {attempts}): {", ".join(classes)}')
            results.append(run_phase(plan.Phase(
                system, name, 'node', [(n,) for n in sorted(targets)],
                names=tuple(classes), tag=f'confirm-{attempt}', rerun=True)))
        new, new_decided = measure(results)
        more += new_decided
        for targets in wanted.values():
            for found in targets.values():
                for old in found:
                    fails, what = _now_fails(old, new, by_record)
                    old.confirmations.append(what)
                    if not fails:
                        old.set_aside = PASSED
    return more
