"""A failure most of a partition shares is one partition finding, not N
bad nodes (scripts/comparison/common_mode.py and its use in acceptance)."""
from scripts.acceptance import compare, plan, verdicts
from scripts.comparison import common_mode

NODES = [f'hb-{i}' for i in range(1, 9)]
CUDA = "ib_write_bw: unrecognized option '--use_cuda=0'"


def test_numbers_and_node_names_are_masked():
    assert common_mode.masked('triad_bw 1190.4 below 8,000 on hb-3 (x2)',
                              ['hb-3']) == 'triad_bw # below # on <node> (x#)'
    assert common_mode.masked(CUDA) == \
        "ib_write_bw: unrecognized option '--use_cuda=#'"


def failure(node, reason=CUDA, check='PerftestLoopback'):
    return verdicts.Finding(node, 'az:nd', check, verdicts.FAIL,
                            reason=f'sanity error: {reason}')


def passing(node, check='PerftestLoopback'):
    return verdicts.Finding(node, 'az:nd', check, verdicts.PASS,
                            metric='bw_avg')


def judged(findings, nodes=NODES):
    return {v.node: v.verdict for v in verdicts.node_verdicts(
        findings, {'az:nd': {n: 'idle' for n in nodes}})}


def test_a_failure_on_half_the_nodes_is_the_partitions():
    findings = [failure(n) for n in NODES[:4]] + \
        [passing(n) for n in NODES[4:]]
    [shared] = compare.shared_failures(findings)
    findings.append(shared)
    assert shared.node == verdicts.WHOLE_PARTITION
    assert shared.reason == ('configuration or software (4 of 8 nodes): '
                             f'sanity error: {CUDA}')
    assert set(judged(findings).values()) == {'good'}
    assert verdicts.partition_findings(findings) == [shared]


def test_fewer_than_half_or_fewer_than_three_nodes_are_their_own():
    findings = [failure(n) for n in NODES[:3]] + \
        [passing(n) for n in NODES[3:]]
    assert compare.shared_failures(findings) == []
    assert [n for n, v in judged(findings).items() if v == 'bad'] == \
        NODES[:3]
    two = [failure(n) for n in NODES[:2]] + [passing(n) for n in NODES[2:4]]
    assert compare.shared_failures(two) == []


def test_different_wordings_are_different_failures():
    findings = [failure(n) for n in NODES[:2]] + \
        [failure(n, 'IB device mlx5_ib0 not found') for n in NODES[2:4]] + \
        [passing(n) for n in NODES[4:6]]
    assert compare.shared_failures(findings) == []


def pair(a, b, bad, check='PerftestPair'):
    """The findings of one pair check on nodes a and b."""
    base = dict(partition='az:nd', check=check, scope='pair')
    verdict = verdicts.FAIL if bad else verdicts.PASS
    reason = 'sanity error: IB device mlx5_ib0 not found' if bad else ''
    return [verdicts.Finding(a, verdict=verdict, partner=b, reason=reason,
                             **base),
            verdicts.Finding(b, verdict=verdict, partner=a, reason=reason,
                             **base)]


def test_a_bad_node_in_a_ring_fails_two_pairs_not_the_partition():
    ring = plan.ring_pairs(NODES[:4])
    findings = [f for a, b in ring for f in pair(a, b, 'hb-2' in (a, b))]
    assert compare.shared_failures(findings) == []
    assert judged(findings, NODES[:4])['hb-2'] == 'bad'
    everywhere = [f for a, b in ring for f in pair(a, b, True)]
    [shared] = compare.shared_failures(everywhere)
    assert shared.reason.startswith('configuration or software (4 of 4 '
                                    'node pairs)')
    assert set(judged(everywhere, NODES[:4]).values()) == {'good'}


# --- a suspect pair re-paired with a good partner (repair.py) ----------------

PERFTEST_PAIR = 'PerftestPair %benchmark=ib_write_bw'


def ring_findings(failing_pair):
    return [f for a, b in plan.ring_pairs(NODES[:4])
            for f in pair(a, b, {a, b} == set(failing_pair), PERFTEST_PAIR)]


def repaired(failing_again):
    """Re-pair hb-1/hb-2 (failed together); *failing_again*: the nodes that
    fail with the good partner."""
    from scripts.acceptance import repair
    findings = ring_findings(('hb-1', 'hb-2'))
    asked = []

    def run_phase(phase):
        asked.append((phase.scope, phase.pins, phase.names))
        return phase

    def measure(phases):
        return [f for a, b in phases[0].pins
                for f in pair(a, b, bool({a, b} & set(failing_again)),
                              PERFTEST_PAIR)]
    nodes = {'az:nd': {n: 'idle' for n in NODES[:4]}}
    assert set(judged(findings, NODES[:4]).values()) == {'suspect', 'good'}
    repair.repair(findings, nodes, run_phase, measure, lambda _: None)
    return asked, findings, judged(findings, NODES[:4])


def test_the_node_that_fails_with_a_good_partner_is_the_bad_one():
    asked, _, verdict = repaired({'hb-2'})
    assert asked == [('pair', [('hb-1', 'hb-3'), ('hb-2', 'hb-3')],
                      ('PerftestPair',))]
    assert verdict == {'hb-1': 'good', 'hb-2': 'bad', 'hb-3': 'good',
                       'hb-4': 'good'}


def test_both_passing_with_a_good_partner_is_the_links_failure():
    _, findings, verdict = repaired(set())
    assert set(verdict.values()) == {'good'}
    [link] = verdicts.partition_findings(findings)
    assert link.reason.startswith('hb-1 and hb-2 failed together, and each '
                                  'passed with hb-3: the link between them')
