"""The parts of the peers' rule issue 37 added (scripts/comparison/peers.py,
metrics.py): primary metrics, the spread floor, "not judged", the
multiple-comparison guard, the confirmation and "implausible value"."""
import random

import pytest

from scripts.comparison import metrics, peers


def rows(values, test='StreamCheck', metric='triad_bw', unit='MB/s',
         session='s-1', device='', **extra):
    return [{'record_id': f'{session}-{test}-{metric}-{device}-{i}',
             'session_id': session,
             'check_display_name': f'{test} %.pinned_nodes=n{i}',
             'check_perf_var': metric, 'check_perf_unit': unit,
             'device': device, 'check_job_nodelist': [f'n{i}'],
             'check_perf_value': value, **extra}
            for i, value in enumerate(values)]


def by_member(judged):
    return {j.member: j for j in judged}


# 32 nodes: a group large enough to judge on the metric's default spread
HEALTHY = [1000.0 + i for i in range(32)]


def test_only_primary_metrics_judge_the_rest_is_recorded_only():
    slow = HEALTHY[:-1] + [100.0]
    judged = by_member(peers.judge_rows(
        rows(slow, 'HpccNode', 'MPIFFT_Gflops', 'Gflop/s')
        + rows(slow, 'HpccNode', 'HPL_Tflops', 'Tflop/s')))
    assert metrics.primary('HpccNode', 'HPL_Tflops')
    assert metrics.primary('HpccNode', 'MPIFFT_Gflops') is None
    fft = [j for j in peers.judge_rows(rows(slow, 'HpccNode',
                                            'MPIFFT_Gflops', 'Gflop/s'))]
    assert all(j.status == peers.NOT_JUDGED and not j.primary
               and 'recorded only' in j.why for j in fft)
    assert judged['n31'].status == peers.FAIL
    # one primary value each: the FFT does not count toward the guard
    assert judged['n31'].judged_values == 1


def test_every_primary_metric_is_a_metric_its_check_emits():
    from checks.cpu import hpcc, stream
    from checks.gpu import nccl
    from checks.network import perftest
    assert {'HPL_Tflops', 'StarSTREAM_Triad'} <= set(
        hpcc.HpccBase.perf_metrics)
    assert 'triad_bw' in stream.StreamBase.perf_metrics
    assert {'busbw', 'avg_busbw'} <= set(nccl.NcclBase.perf_metrics)
    assert 'bw_avg' in perftest.BW_METRICS


def test_too_few_peers_and_too_noisy_peers_are_not_judged_and_say_why():
    few = peers.judge_rows(rows([1000.0, 990.0, 1010.0, 500.0]))
    assert {j.why for j in few} == \
        {'not judged by peers: 3 peers, at least 4 needed'}
    rng = random.Random(3)
    noisy = [1000.0 * (1 + 0.3 * rng.gauss(0, 1)) for _ in range(5)]
    judged = peers.judge_rows(rows(noisy))
    assert all(j.status == peers.NOT_JUDGED for j in judged)
    assert judged[0].why.startswith('not judged by peers: 4 peers, spread ')
    assert not any(j.still_fails(1.0) for j in judged)


def test_peers_too_noisy_to_judge_still_judge_a_gross_loss():
    # the CI sandbox's HPL (Tflop/s): four healthy peers spread 16 %, and
    # sb-n3 capped at a quarter of a CPU
    values = [0.0042, 0.00575, 0.00065, 0.00652, 0.00636]
    judged = peers.judge_rows(rows(values, 'HpccNode', 'HPL_Tflops',
                                   'Tflop/s'))
    assert [j.status for j in judged] == [peers.NOT_JUDGED] * 2 + [
        peers.FAIL] + [peers.NOT_JUDGED] * 2
    capped = judged[2]
    assert capped.reason('Tflop/s').endswith(
        '(a gross loss: peers too noisy, spread 15.7%, to judge a smaller '
        'one)')
    assert capped.tolerance_used == pytest.approx(0.5)
    # confirmed only by a re-run that loses as much again
    assert capped.still_fails(0.0007)
    assert not capped.still_fails(0.0040)
    # a 40 % loss in such a group is not judged: its peers spread too much
    values[2] = 0.0035
    judged = peers.judge_rows(rows(values, 'HpccNode', 'HPL_Tflops',
                                   'Tflop/s'))
    assert judged[2].status == peers.NOT_JUDGED
    # nor does the gross rule blame anyone when three times the peers'
    # spread is more than half
    wide = [1000.0, 700.0, 1300.0, 450.0, 1150.0]
    assert {j.status for j in peers.judge_rows(rows(wide))} == \
        {peers.NOT_JUDGED}


def test_identical_peers_cannot_turn_a_small_deviation_into_a_fault():
    # MAD 0: the floor (the metric's spread) keeps the z finite and small
    judged = by_member(peers.judge_rows(rows([1000.0] * 31 + [985.0])))
    assert judged['n31'].status == peers.PASS
    assert judged['n31'].robust_z == pytest.approx(-1.5)


def test_a_site_baseline_spread_on_the_row_is_the_floor():
    values = [1000.0] * 31 + [940.0]
    default = by_member(peers.judge_rows(rows(values)))['n31']
    measured = by_member(peers.judge_rows(
        rows(values, verdict_spread=0.03)))['n31']
    assert default.spread == metrics.STEADY and default.still_fails(940.0)
    assert measured.spread == 0.03 and measured.spread_source == \
        'site baseline' and not measured.still_fails(940.0)


def test_small_groups_without_a_baseline_and_smoke_sizes_judge_gross_faults():
    values = [1000.0, 1004.0, 996.0, 1002.0, 900.0]
    judged = by_member(peers.judge_rows(rows(values)))['n4']
    assert judged.spread == peers.SMALL_GROUP_SPREAD
    assert not judged.still_fails(900.0)
    with_baseline = by_member(peers.judge_rows(
        rows(values, verdict_spread=0.01)))['n4']
    assert with_baseline.still_fails(900.0)
    smoke = by_member(peers.judge_rows(
        rows(HEALTHY[:-1] + [920.0],
             check_params={'size_profile': 'smoke'})))['n31']
    assert smoke.spread == peers.SMOKE_SPREAD
    assert not smoke.still_fails(920.0)
    capped = by_member(peers.judge_rows(
        rows([1000.0, 1004.0, 996.0, 1002.0, 210.0],
             check_params={'size_profile': 'smoke'})))['n4']
    assert capped.fail and capped.still_fails(205.0)


def test_the_guard_raises_the_limit_with_the_number_of_judged_values():
    limits = [peers.value_z_limit(0.05, m) for m in (1, 10, 50)]
    assert limits == sorted(limits)
    assert limits[0] == pytest.approx(1.645, abs=5e-4)
    # Sidak: M values at the per-value limit keep the node's chance
    for m in (1, 10, 50):
        per_value = peers.upper_tail(peers.value_z_limit(0.05, m))
        assert 1 - (1 - per_value) ** m == pytest.approx(0.05, rel=0.02)
    # the count is per node and run: 3 primary metrics of one node
    judged = peers.judge_rows(rows(HEALTHY, device='a')
                              + rows(HEALTHY, device='b')
                              + rows(HEALTHY, device='c')
                              + rows(HEALTHY, session='s-2'))
    assert {(j.row['session_id'], j.judged_values) for j in judged} == \
        {('s-1', 3), ('s-2', 1)}


def test_a_flag_stands_only_when_the_re_run_fails_too():
    judged = by_member(peers.judge_rows(rows(HEALTHY[:-1] + [880.0])))
    flagged = judged['n31']
    assert flagged.fail and flagged.status == peers.FAIL
    assert flagged.still_fails(870.0)
    assert not flagged.still_fails(1001.0)      # flaky: it did not repeat
    assert not judged['n3'].still_fails(880.0)  # never flagged


def test_a_value_far_off_is_an_implausible_value_not_a_percentage():
    judged = by_member(peers.judge_rows(rows(
        [0.104, 0.105, 0.103, 0.104, 0.106] * 3 + [8250.3],
        'OsuPointToPoint', 'latency', 'us')))['n15']
    assert judged.implausible and judged.fail
    text = judged.reason('us')
    assert text.startswith('implausible value: 8,250.3 us') and '%' not in \
        text.split('(')[0]


def test_the_primary_table_names_no_metric_twice():
    keys = [(p.test, p.metric) for p in metrics.PRIMARY]
    assert len(keys) == len(set(keys))


def test_a_row_judged_by_the_site_baseline_carries_its_spread():
    from config.results.rows import judge
    verdict = {'fail': False, 'reason': '', 'value': 1000.0, 'lower': -0.1,
               'upper': 0.1, 'source': 'site baseline: ...', 'spread': 0.02}
    row = judge.with_site_baseline({'check_perf_result': 'no_reference'},
                                   verdict)
    assert row['verdict_spread'] == 0.02
    assert judge.with_site_baseline({'check_perf_result': 'no_reference'},
                                    None).get('verdict_spread') is None
