"""Siblings (scripts/comparison/siblings.py): the devices of one node and one
job judged against each other, so one node alone names its slow GPU or
HCA. Values come from real outputs (tests/support/data/nvbandwidth)."""
import itertools

from checks.parsers import nvbandwidth
from scripts.acceptance import compare
from scripts.comparison import siblings
from tests.support.helpers import REPO

SUPPORT = REPO / 'tests' / 'support' / 'data'

_ids = itertools.count()


def h2d_values():
    """host_to_device_memcpy_ce of the 8 x H800 run (line 25 of the file):
    55.28 ... 55.34 GB/s."""
    text = (SUPPORT / 'nvbandwidth' /
            'nvbandwidth-v0.2-8xH800-full-run-llm-action.out').read_text()
    result = nvbandwidth.parse(text)
    return [result.value(f'host_to_device_memcpy_ce_gpu{i}')
            for i in range(8)]


def rows_of(node, values, jobid, metric='h2d_bw', unit='GB/s',
            test='GpuCopyBandwidth %.pinned_nodes=' ):
    return [{'record_id': f'r{next(_ids)}', 'session_id': 's',
             'cluster': 'c', 'check_partition': 'ndv5',
             'check_system': 'azure', 'vm_sku': 'Standard_ND96isr_H100_v5',
             'check_display_name': f'{test}{node}',
             'check_name': test.split(' ')[0],
             'check_perf_var': metric, 'check_perf_unit': unit,
             'check_perf_value': value, 'device': f'gpu{i}',
             'check_job_nodelist': [node], 'check_jobid': jobid}
            for i, value in enumerate(values)]


def test_one_pcie_link_trained_down_names_that_gpu_only():
    values = h2d_values()
    slow = list(values)
    slow[3] = round(values[3] / 2, 2)     # x16 -> x8: half the copy rate
    rows = rows_of('nd-1', values, '11') + rows_of('nd-2', slow, '12')
    judged = siblings.judge_rows(rows)
    failed = [(j.row['check_job_nodelist'][0], j.member) for j in judged
              if j.fail]
    assert failed == [('nd-2', 'gpu3')]
    bad = next(j for j in judged if j.fail)
    assert bad.peers == 7
    assert siblings.reason(bad).startswith(
        "gpu3: 50.0% below the 7 siblings' median 55.3")


def test_healthy_siblings_pass():
    judged = siblings.judge_rows(rows_of('nd-1', h2d_values(), '11'))
    assert len(judged) == 8 and not any(j.fail for j in judged)


def test_four_gpus_are_judged_three_are_not():
    values = h2d_values()[:4]
    values[0] = values[0] * 0.5
    four = siblings.judge_rows(rows_of('gb-1', values, '21'))
    assert [j.member for j in four if j.fail] == ['gpu0']
    three = siblings.judge_rows(rows_of('gb-2', values[:3], '22'))
    assert not any(j.fail for j in three)
    assert all(j.median is None for j in three)


def test_two_jobs_on_one_node_are_not_siblings():
    values = h2d_values()
    rows = rows_of('nd-1', values[:4], '31') + rows_of('nd-1', values[4:],
                                                       '32')
    rows[0]['check_perf_value'] = 1.0
    judged = siblings.judge_rows(rows)
    assert {j.peers for j in judged} == {3}


def test_rows_without_a_device_or_of_several_nodes_are_left_out():
    rows = rows_of('nd-1', h2d_values(), '41')
    rows[0]['device'] = None
    rows[1]['check_job_nodelist'] = ['nd-1', 'nd-2']
    assert len(siblings.judge_rows(rows)) == 6


def test_acceptance_turns_a_failing_sibling_into_a_finding_of_its_node():
    values = h2d_values()
    slow = list(values)
    slow[5] = 20.0
    rows = rows_of('nd-1', values, '51') + rows_of('nd-2', slow, '52')
    decided = compare.sibling_judgements(rows)
    findings = compare.failing_findings(decided, [])
    assert [(f.node, f.metric, f.basis) for f in findings] == \
        [('nd-2', 'h2d_bw_gpu5', 'siblings')]
    verdicts = compare.verdict_rows(decided, 'sess')
    assert len(verdicts) == 1
    assert verdicts[0]['verdict_basis'] == 'siblings'



def test_a_slow_hca_among_eight_is_named_on_one_node():
    """HCAs are siblings too: a real NDR ib_read_bw (tests/support/data/perftest,
    line 23: BW average 328.61 Gb/s) on seven HCAs, one HCA at a quarter
    of it (a link trained down to 100 Gb/s)."""
    from checks.parsers import perftest
    text = (SUPPORT / 'perftest' /
            'ib_read_bw_ndr-cx7-b2b-gbits.out').read_text()
    good = perftest.parse(text).value('bw_avg')
    values = [good] * 8
    values[6] = round(good / 4, 2)
    rows = rows_of('nd-3', values, '61', metric='bw_avg', unit='Gb/s',
                   test='PerftestLoopback %.pinned_nodes=')
    for i, row in enumerate(rows):
        row['device'] = f'mlx5_ib{i}'
    judged = siblings.judge_rows(rows)
    assert [j.member for j in judged if j.fail] == ['mlx5_ib6']
    findings = compare.failing_findings(compare.sibling_judgements(rows), [])
    assert [(f.node, f.metric) for f in findings] == \
        [('nd-3', 'bw_avg_mlx5_ib6')]
