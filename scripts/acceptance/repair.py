"""A suspect pair (a pair check failed, and neither node failed with
another partner) is run again with a partner that passed: a node that fails
with it too has now failed with two partners and is bad (verdicts.py's pair
rule); when both pass with it, the pair's failure is neither node's (the
link between them, or a passing fault) and is reported for the partition.
Google's cluster-health-scanner re-pairs a suspect node the same way
(https://github.com/GoogleCloudPlatform/cluster-health-scanner)."""
from __future__ import annotations

from collections import defaultdict

from . import plan, verdicts

NEITHER = 'failed with this partner only; both passed with a good partner'


def suspect_pairs(findings, node_verdicts) -> list[tuple[str, str, tuple]]:
    """(partition, test class, (a, b)) of every failing pair of two suspect
    nodes."""
    suspect = {(v.partition, v.node) for v in node_verdicts
               if v.verdict == verdicts.SUSPECT}
    pairs = set()
    for f in findings:
        if f.scope == 'pair' and f.verdict == verdicts.FAIL and f.partner \
                and not f.set_aside and not f.blamed_on_partner \
                and (f.partition, f.node) in suspect \
                and (f.partition, f.partner) in suspect:
            pairs.add((f.partition, verdicts.class_name({'name': f.check}),
                       tuple(sorted((f.node, f.partner)))))
    return sorted(pairs)


def good_partner(partition: str, node_verdicts, findings, busy: set
                 ) -> str | None:
    """A good node of the partition (or one no basis could judge) that
    passed a pair check."""
    passed = {f.node for f in findings if f.partition == partition
              and f.scope == 'pair' and f.verdict == verdicts.PASS}
    good = sorted(v.node for v in node_verdicts if v.partition == partition
                  and v.verdict in (verdicts.GOOD, verdicts.NOT_JUDGED)
                  and v.node not in busy)
    return next((n for n in good if n in passed), good[0] if good else None)


def repair(findings: list, nodes: dict, run_phase, measure, say) -> None:
    """Re-pair the suspect pairs; adds the new findings to *findings*, and
    a partition finding for each pair that neither node explains."""
    judged = verdicts.node_verdicts(findings, nodes)
    pairs = suspect_pairs(findings, judged)
    if not pairs:
        return
    plans: dict[str, list] = defaultdict(list)
    for partition, check, (a, b) in pairs:
        partner = good_partner(partition, judged, findings, {a, b})
        if partner is None:
            say(f'{partition}: no good partner to re-pair {a} and {b} with')
            continue
        plans[partition].append((check, a, b, partner))
    results = []
    for partition, wanted in sorted(plans.items()):
        system, _, name = partition.partition(':')
        pins = sorted({tuple(sorted((node, g))) for _, a, b, g in wanted
                       for node in (a, b)})
        classes = sorted({check for check, *_ in wanted})
        say(f're-pairing {len(wanted)} suspect pair(s) of {partition} with '
            f'a good partner: {", ".join(",".join(p) for p in pins)}')
        results.append(run_phase(plan.Phase(system, name, 'pair', pins,
                                            names=tuple(classes),
                                            tag='repair', rerun=True)))
    new = measure(results)
    findings += new
    for partition, wanted in plans.items():
        for check, a, b, partner in wanted:
            _settle(findings, new, partition, check, (a, b), partner)


def _passed_with(new, partition, check, node, partner) -> bool:
    found = [f for f in new if f.partition == partition and f.node == node
             and f.partner == partner
             and verdicts.class_name({'name': f.check}) == check]
    return bool(found) and all(f.verdict == verdicts.PASS for f in found)


def _settle(findings, new, partition, check, pair, partner) -> None:
    a, b = pair
    if not all(_passed_with(new, partition, check, n, partner) for n in pair):
        return  # one failed again: now with two partners, the rule says who
    first = None
    for f in findings:
        if f.partition == partition and f.scope == 'pair' and \
                f.verdict == verdicts.FAIL and {f.node, f.partner} == {a, b} \
                and verdicts.class_name({'name': f.check}) == check:
            f.set_aside = NEITHER
            first = first or f
    if first is not None:
        findings.append(verdicts.Finding(
            node=verdicts.WHOLE_PARTITION, partition=partition,
            check=first.check, verdict=verdicts.FAIL, scope='link',
            metric=first.metric, reason=f'{a} and {b} failed together, and '
            f'each passed with {partner}: the link between them or a passing '
            f'fault, not a node ({" ".join(first.reason.split())})'))
