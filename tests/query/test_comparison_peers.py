"""The peers rule (scripts/comparison/peers.py) on its own, and against
node_outliers.kql on the same stores: one rule, in Python and KQL."""
import dataclasses
import datetime as dt
import random

import pytest

from config.results.rows import schema as row_schema
from config.results.store import files as store
from scripts.comparison import metrics, peers
from scripts.query import library
from scripts.query.runner import Runner
from tests.support import query_store


def brute_force(values, lower, rule, floor=0.01):
    """The rule as written, for a member with one judged value: each value
    against the others, O(n^2)."""
    found = []
    for i, value in enumerate(values):
        others = sorted(values[:i] + values[i + 1:])
        if len(others) < rule.min_peers:
            found.append(False)
            continue
        median = others[(len(others) - 1) // 2]
        devs = sorted(abs(v - median) for v in others)
        mad = devs[(len(devs) - 1) // 2]
        own = 1.4826 * mad / median
        worse = ((value - median) if lower else (median - value)) / median
        if own > rule.max_spread:
            # too noisy: only a gross loss is judged
            found.append(worse > max(0.5, 3 * own))
            continue
        # the peers' spread at its upper bound, at least the floor
        spread = max(own * (1 + 3.0 * 1.17 / len(others) ** 0.5), floor)
        z = (value - median) / (spread * median)
        limit = peers.value_z_limit(rule.flag_alpha, 1)
        found.append(worse > rule.tolerance and (
            z > limit if lower else z < -limit))
    return found


@pytest.mark.parametrize('seed', range(30))
def test_leave_one_out_median_and_mad_match_the_definition(seed):
    rng = random.Random(seed)
    n = rng.randint(4, 40)
    values = [round(rng.gauss(1000, 30)) for _ in range(n)]
    for _ in range(rng.randint(0, 3)):
        values[rng.randrange(n)] = rng.choice([700, 1300, 1000])
    lower = bool(seed % 2)
    rule = peers.Rule()
    judged = peers.judge_group(values, lower, rule)
    assert [fail for *_, fail in judged] == brute_force(values, lower, rule)
    for i, (count, median, mad, _) in enumerate(judged):
        others = sorted(values[:i] + values[i + 1:])
        assert count == n - 1
        assert median == others[(n - 2) // 2]


def test_fifteen_percent_below_fails_the_others_pass():
    values = [12369.6, 12100.0, 12480.2, 12250.1, 0.85 * 12369.6]
    judged = peers.judge_group(values, False, peers.Rule())
    assert [fail for *_, fail in judged] == [False] * 4 + [True]


def test_four_peers_at_least_the_node_itself_not_counted():
    # four nodes are three peers each: not judged by default
    values = [12369.6, 12100.0, 12480.2, 0.5 * 12369.6]
    judged = peers.judge_group(values, False, peers.Rule())
    assert [(count, median, fail) for count, median, _, fail in judged] \
        == [(3, None, False)] * 4
    judged = peers.judge_group(values, False, peers.Rule(min_peers=3))
    assert [fail for *_, fail in judged] == [False] * 3 + [True]


def test_direction_comes_from_the_metric():
    assert peers.lower_is_better('latency', 'us')
    assert peers.lower_is_better('total_time', 's')
    assert not peers.lower_is_better('triad_bw', 'MB/s')
    slow = [1.7, 1.71, 1.69, 1.72, 2.4]
    assert [f for *_, f in peers.judge_group(slow, True, peers.Rule())] == \
        [False] * 4 + [True]
    # the same numbers as a bandwidth: 2.4 is the best, nobody fails
    assert not any(f for *_, f in peers.judge_group(slow, False,
                                                     peers.Rule()))


def test_identical_peers_leave_the_tolerance_alone_to_decide():
    judged = peers.judge_group([100.0, 100.0, 100.0, 100.0, 89.0], False,
                               peers.Rule())
    assert judged[4][2] == 0 and judged[4][3] is True
    judged = peers.judge_group([100.0, 100.0, 100.0, 100.0, 96.0], False,
                               peers.Rule())
    assert judged[4][3] is False


def test_a_wide_spread_needs_the_z_score_too():
    # 12% below the median, but the peers spread that much themselves
    values = [100.0, 80.0, 120.0, 95.0, 105.0, 88.0]
    assert not any(f for *_, f in peers.judge_group(values, False,
                                                     peers.Rule()))


def test_too_few_nodes_are_not_judged():
    judged = peers.judge_group([100.0, 100.0, 50.0], False, peers.Rule())
    assert judged == [(2, None, None, False)] * 3


def test_pins_and_distribute_parameters_are_stripped():
    assert peers.unpinned('StreamCheck %.pinned_nodes=hb-3') == 'StreamCheck'
    assert peers.unpinned('PerftestPair %benchmark=ib_write_bw '
                          '%.pinned_nodes=a,b') == \
        'PerftestPair %benchmark=ib_write_bw'
    assert peers.unpinned("StreamCheck %.part=azure:hbv4 %.nid=['a']") == \
        'StreamCheck'


# --- one rule in Python and KQL ---------------------------------------------

def outliers(runner, rule=peers.Rule(), alone=False):
    """node_outliers' rows under *rule*; *alone*: its outliers-only form
    (library.outliers_only(): the report's and the CLI's default)."""
    query = (library.outliers_only() if alone
             else library.shipped()['node_outliers'])
    query = dataclasses.replace(query, text=peers.kql_with_rule(query.text,
                                                                rule))
    return runner.run(query).records()


def assert_agree(rows, runner, rule=peers.Rule()):
    judged = outliers(runner, rule)
    # the outliers-only form computes deviations only for the groups with a
    # suspect: the same outliers, every column, in the same order
    assert outliers(runner, rule, alone=True) == \
        [r for r in judged if r['outlier']]
    kql = {(r['record_id'], r['node']): r for r in judged}
    python = {(j.row['record_id'], j.member): j
              for j in peers.judge_rows(rows, peers.Rules(rule))
              if j.median is not None}
    assert set(kql) == set(python)
    for key, judged in python.items():
        row = kql[key]
        assert (row['outlier'], row['peers'], row['peer_median'],
                row['mad']) == (judged.fail, judged.peers, judged.median,
                                judged.mad), key
    return {key for key, j in python.items() if j.fail}


@pytest.fixture(scope='module')
def realistic(tmp_path_factory):
    home = tmp_path_factory.mktemp('store')
    rows = query_store.build(home)
    return rows, Runner(results_dir=home / 'results', now=query_store.NOW)


def test_python_and_kql_agree_on_the_realistic_store(realistic):
    rows, runner = realistic
    assert assert_agree(rows, runner) == {('stream-6-hb-3', 'hb-3')}
    # three ND nodes per HCA: judged only with a smaller minimum, per device
    flagged = assert_agree(rows, runner, peers.Rule(min_peers=2))
    assert ('stream-6-hb-3', 'hb-3') in flagged
    judged = [r for r in outliers(runner, peers.Rule(min_peers=2))
              if r['check_perf_var'] == 'bw_avg']
    assert {r['device'] for r in judged} == set(query_store.HCAS)
    assert all(r['peers'] == len(query_store.ND_NODES) - 1 for r in judged)


def acceptance_rows(nodes, values, session='acc-1', metric='triad_bw',
                    unit='MB/s', test='StreamCheck', params=None):
    when = dt.datetime(2026, 11, 30, 2, 0, tzinfo=dt.timezone.utc)
    return [row_schema.make_row({
        'TimeGenerated': when.isoformat(), 'record_id': f'{session}-{node}',
        'session_id': session, 'facility': 'reframe', 'cluster': 'sandbox',
        'check_system': 'sandbox', 'check_partition': 'hbv4',
        'vm_sku': 'HB176rs_v4', 'check_name': f'{test}_{node}',
        'check_display_name': f'{test} %.pinned_nodes={node}',
        'check_params': params,
        'check_perf_var': metric, 'check_perf_value': value,
        'check_perf_unit': unit, 'check_perf_result': 'no_reference',
        'check_job_nodelist': [node],
        'check_job_completion_time': (when + dt.timedelta(seconds=i))
        .isoformat()}) for i, (node, value) in enumerate(zip(nodes, values))]


def test_pinned_acceptance_rows_are_one_group_in_both(tmp_path):
    nodes = ['sb-n1', 'sb-n2', 'sb-n3', 'sb-n4', 'sb-n5']
    rows = acceptance_rows(nodes, [12369.6, 12100.0, 0.8 * 12369.6, 12480.2,
                                   12250.1])
    rows += acceptance_rows(nodes, [1.7, 1.71, 1.69, 2.2, 1.72],
                            metric='latency', unit='us', session='acc-2',
                            test='OsuPointToPoint')
    # peers too noisy to judge (the CI sandbox's HPL: 4 peers spread 16 %
    # and more) but for a gross loss: sb-n3, capped, at a tenth of them
    rows += acceptance_rows(nodes, [0.0042, 0.00575, 0.00065, 0.00652,
                                    0.00636], metric='HPL_Tflops',
                            unit='Tflop/s', session='acc-3',
                            test='HpccNode')
    session = store.SessionFile('20261130T020000Z-acc', tmp_path / 'results')
    session.append_rows(rows)
    runner = Runner(results_dir=tmp_path / 'results')
    assert assert_agree(rows, runner) == {('acc-1-sb-n3', 'sb-n3'),
                                          ('acc-2-sb-n4', 'sb-n4'),
                                          ('acc-3-sb-n3', 'sb-n3')}
    gross = [r for r in outliers(runner) if r['session_id'] == 'acc-3']
    assert {r['node']: r['status'] for r in gross} == {
        'sb-n1': 'not judged', 'sb-n2': 'not judged', 'sb-n3': 'fail',
        'sb-n4': 'not judged', 'sb-n5': 'not judged'}
    [capped] = [r for r in gross if r['node'] == 'sb-n3']
    assert capped['why'] == ('a gross loss: peers too noisy, spread 15.7%, '
                             'to judge a smaller one')


def test_the_kql_rule_settings_follow_the_python_rule():
    shipped = library.shipped()['node_outliers'].text
    text = peers.kql_with_rule(shipped, peers.Rule(0.04, 2.5, 6, 0.2, 0.1))
    assert 'let min_peers = 6;' in text and 'let max_spread_pct = 20.0;' in text
    assert 'let max_worse_pct = 4.0;' in text
    assert 'let flag_alpha = 0.1;' in text
    assert peers.kql_with_rule(shipped, peers.Rule()) == shipped


def test_the_kql_constants_and_primary_table_are_pythons():
    shipped = library.shipped()['node_outliers'].text
    assert metrics.kql_table() in shipped
    assert f'let min_spread = {peers.MIN_SPREAD!r};' in shipped
    assert f'let smoke_spread = {peers.SMOKE_SPREAD!r};' in shipped
    assert f'let implausible_ratio = {peers.IMPLAUSIBLE_RATIO!r};' in shipped
    assert f'let small_group_peers = {peers.SMALL_GROUP_PEERS!r};' in shipped
    assert f'let small_group_spread = {peers.SMALL_GROUP_SPREAD!r};' \
        in shipped
    assert f'let spread_bound_z = {peers.SPREAD_BOUND_Z!r};' in shipped
    assert f'let mad_standard_error = {peers.MAD_STANDARD_ERROR!r};' \
        in shipped


def test_comparing_a_large_run_is_fast():
    """tests/bench/comparison_time.py times 1,000 nodes x 50 metrics (< 5 s);
    here a fifth of the metrics, with room for a loaded CI machine."""
    import time
    from scripts.acceptance import compare
    from tests.bench.comparison_time import run_rows
    rows = run_rows(1000, 10)
    start = time.perf_counter()
    decided = compare.peer_judgements(rows, peers.Rules())
    assert time.perf_counter() - start < 3
    slow = {d.row['check_job_nodelist'][0] for d in decided if d.fail}
    assert len(slow) == 10


def test_leave_one_out_medians_agree_on_groups_of_every_size(tmp_path):
    """node_outliers takes each member's peers' median and MAD from two
    order statistics of its group (no member-by-member pairing): groups of
    4 to 14 members (4: too few peers to judge), even and odd, with
    repeated values and ties at the middle, must come out exactly as
    peers.judge_group's."""
    import random
    rand = random.Random(7)
    rows = []
    for size in range(4, 15):
        for shape in range(3):
            nodes = [f'n{size:02d}-{i:02d}' for i in range(size)]
            if shape == 0:      # few distinct values: ties everywhere
                values = [float(rand.choice([90, 100, 100, 110]))
                          for _ in nodes]
            elif shape == 1:    # one slow node among near-identical peers
                values = [1000.0 + rand.randint(0, 3) for _ in nodes]
                values[rand.randrange(size)] = 700.0
            else:
                values = [round(rand.gauss(500, 40), 1) for _ in nodes]
            rows += acceptance_rows(nodes, values,
                                    session=f'acc-{size}-{shape}')
    session = store.SessionFile('20261130T020000Z-sizes', tmp_path / 'results')
    session.append_rows(rows)
    runner = Runner(results_dir=tmp_path / 'results')
    flagged = assert_agree(rows, runner)
    assert len({key[0].rsplit('-', 1)[0] for key in flagged}) >= 10


def test_a_member_measured_twice_in_a_run_counts_by_its_latest_row(tmp_path):
    """A retry in the same run: node_outliers keeps the member's latest row
    (the earlier one is neither judged nor a peer), as peers.judge_rows
    does; the other members pass through without the retry's arg_max."""
    nodes = ['sb-n1', 'sb-n2', 'sb-n3', 'sb-n4', 'sb-n5', 'sb-n6']
    values = [12369.6, 12100.0, 12480.2, 12250.1, 12300.0, 12410.0]
    rows = acceptance_rows(nodes, values)
    # sb-n2 slow first, then retried within range; sb-n5 the other way
    first = acceptance_rows(['sb-n2', 'sb-n5'], [0.5 * 12100.0, 12300.0])
    retry = acceptance_rows(['sb-n2', 'sb-n5'], [12120.0, 0.7 * 12300.0])
    for row in first:
        row['record_id'] += '-first'
        row['check_job_completion_time'] = '2026-11-30T01:00:00+00:00'
    for row in retry:
        row['record_id'] += '-retry'
        row['check_job_completion_time'] = '2026-11-30T03:00:00+00:00'
    rows += first + retry
    session = store.SessionFile('20261130T020000Z-retry', tmp_path / 'results')
    session.append_rows(rows)
    runner = Runner(results_dir=tmp_path / 'results')
    assert assert_agree(rows, runner) == {('acc-1-sb-n5-retry', 'sb-n5')}
    judged = outliers(runner)
    assert sorted(r['node'] for r in judged) == nodes
    assert {r['record_id'] for r in judged if r['node'] in ('sb-n2', 'sb-n5')} \
        == {'acc-1-sb-n2-retry', 'acc-1-sb-n5-retry'}
    assert all(r['peers'] == 5 for r in judged)
