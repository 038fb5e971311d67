"""A failure most of a partition shares is one partition finding, not N
bad nodes (scripts/judging/common_mode.py and its use in acceptance)."""
from scripts.acceptance import judge, plan, verdicts
from scripts.judging import common_mode

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
    [shared] = judge.shared_failures(findings)
    findings.append(shared)
    assert shared.node == verdicts.WHOLE_PARTITION
    assert shared.reason == ('configuration or software (4 of 8 nodes): '
                             f'sanity error: {CUDA}')
    assert set(judged(findings).values()) == {'good'}
    assert verdicts.partition_findings(findings) == [shared]


def test_fewer_than_half_or_fewer_than_three_nodes_are_their_own():
    findings = [failure(n) for n in NODES[:3]] + \
        [passing(n) for n in NODES[3:]]
    assert judge.shared_failures(findings) == []
    assert [n for n, v in judged(findings).items() if v == 'bad'] == \
        NODES[:3]
    two = [failure(n) for n in NODES[:2]] + [passing(n) for n in NODES[2:4]]
    assert judge.shared_failures(two) == []


def test_different_wordings_are_different_failures():
    findings = [failure(n) for n in NODES[:2]] + \
        [failure(n, 'IB device mlx5_ib0 not found') for n in NODES[2:4]] + \
        [passing(n) for n in NODES[4:6]]
    assert judge.shared_failures(findings) == []


def test_a_bad_node_in_a_ring_fails_two_pairs_not_the_partition():
    def pair(a, b, bad):
        base = dict(partition='az:nd', check='PerftestPair', scope='pair')
        verdict = verdicts.FAIL if bad else verdicts.PASS
        reason = 'sanity error: IB device mlx5_ib0 not found' if bad else ''
        return [verdicts.Finding(a, verdict=verdict, partner=b,
                                 reason=reason, **base),
                verdicts.Finding(b, verdict=verdict, partner=a,
                                 reason=reason, **base)]
    ring = plan.ring_pairs(NODES[:4])
    findings = [f for a, b in ring for f in pair(a, b, 'hb-2' in (a, b))]
    assert judge.shared_failures(findings) == []
    assert judged(findings, NODES[:4])['hb-2'] == 'bad'
    everywhere = [f for a, b in ring for f in pair(a, b, True)]
    [shared] = judge.shared_failures(everywhere)
    assert shared.reason.startswith('configuration or software (4 of 4 '
                                    'node pairs)')
    assert set(judged(everywhere, NODES[:4]).values()) == {'good'}
