"""The acceptance summary lists and counts what passed, and shows apart the
findings confirmed, flaky and not judged; only a confirmed bad node is
drained (no Slurm here: the verdicts are built as acceptance builds them)."""
import re

from scripts.acceptance import compare, confirm, session, summary, verdicts
from scripts.acceptance.verdicts import FAIL, NOT_MEASURED, PASS, Finding
from scripts.guest_health import reporting
from scripts.comparison import peers

PARTITION = 'sb:hbv4'
NODES = ['sb-n1', 'sb-n2', 'sb-n3', 'sb-n4', 'sb-n5']


def finding(check, verdict, metric=None, node='*', jobid='1'):
    return Finding(node=node, partition='local:default', check=check,
                   verdict=verdict, metric=metric, jobid=jobid)


def test_acceptance_lists_and_counts_what_passed():
    findings = [finding('HpccNode', 'no_reference', 'HPL_Tflops'),
                finding('HpccNode', 'informational', 'PTRANS_GBs'),
                finding('IorCheck', NOT_MEASURED, jobid=None),
                finding('HplCheck', FAIL, 'gflops', jobid='2'),
                finding('HplCheck', PASS, 'efficiency', jobid='2')]
    passes = summary.whole_partition_passes(findings)
    assert passes == [{'partition': 'local:default', 'check': 'HpccNode',
                       'results': 2}]
    counts = summary.check_counts(findings)
    assert counts == {PASS: 1, FAIL: 1, NOT_MEASURED: 1}
    table = summary.table_lines([], [], passes)
    assert table[1].split()[:7] == ['local:default', '(whole)', 'HpccNode',
                                    '-', '-', '-', 'pass']
    assert summary.count_line(summary.node_counts([]), counts) == (
        '0 node(s): 0 bad, 0 suspect, 0 flaky, 0 not judged, 0 not '
        'measured, 0 powered down, 0 good; 3 check result(s): 1 passed, 1 '
        'failed, 1 not measured')


def row(node, value, metric='triad_bw', record=None):
    """A stored row of a one-node STREAM case, as the store keeps it."""
    return {'record_id': record or f'{node}-{metric}', 'check_jobid': '7',
            'check_system': 'sb', 'check_partition': 'hbv4',
            'check_name': 'StreamCheck', 'vm_sku': 'Standard_HB176rs_v4',
            'check_display_name': f'StreamCheck %.pinned_nodes={node}',
            'check_perf_var': metric, 'check_perf_value': value,
            'check_perf_unit': 'MB/s', 'check_job_nodelist': [node],
            'device': None, 'check_environ': 'gnu', 'cluster': 'sb',
            'check_perf_result': 'informational', 'reference_key': None,
            'check_params': None}


def measured(rows):
    """The findings the run report gives for those rows: informational
    (no published reference), linked to their rows."""
    return [Finding(node=r['check_job_nodelist'][0], partition=PARTITION,
                    check='StreamCheck', verdict='informational',
                    metric=r['check_perf_var'],
                    value=r['check_perf_value'], unit='MB/s', jobid='7',
                    record_id=r['record_id']) for r in rows]


def judged_run(values, confirm_values=None, min_peers=4, one_at_a_time=()):
    """Acceptance's judging of one run of STREAM on five nodes, and of a
    confirmation run where *confirm_values* says what each node measures
    again (a control it does not name measures what it measured first;
    peers.py's rule, as acceptance applies it)."""
    rows = [row(n, v) for n, v in zip(NODES, values)]
    findings = measured(rows)
    rules = peers.Rules(peers.Rule(min_peers=min_peers))
    decided = compare.peer_judgements(rows, rules)
    findings += compare.failing_findings(decided, findings)
    findings += compare.not_judged_findings(decided, findings)
    nodes = {PARTITION: {n: 'idle' for n in NODES}}
    phases, cost = [], confirm.Cost()

    def run_phase(phase):
        phases.append(phase)
        return phase

    def measure(results):
        first = dict(zip(NODES, values))
        again = [row(pin[0], confirm_values.get(pin[0], first[pin[0]]),
                     record=f'{pin[0]}-2')
                 for phase in results for pin in phase.pins]
        return measured(again), [], again

    if confirm_values is not None:
        decided += confirm.confirm(1, findings, decided, nodes, run_phase,
                                   measure, lambda line: None, cost,
                                   frozenset(one_at_a_time))
    return verdicts.node_verdicts(findings, nodes), decided, findings, \
        phases, cost


def test_a_flag_that_repeats_is_bad_confirmed_and_drained_alone():
    healthy = [12400.0, 12370.0, 12350.0, 12380.0]
    verdict_list, decided, findings, phases, cost = judged_run(
        [healthy[0], healthy[1], 10382.9, healthy[2], healthy[3]],
        {'sb-n3': 10390.0})
    by_node = {v.node: v for v in verdict_list}
    assert by_node['sb-n3'].verdict == verdicts.BAD
    assert by_node['sb-n3'].confirmed
    # a job of its own (one pin of one node), only the check it failed,
    # beside two good nodes as controls
    assert [(p.scope, p.pins, p.names, p.options) for p in phases] == \
        [('node', [('sb-n3',), ('sb-n1',), ('sb-n2',)], ('StreamCheck',),
          [])]
    assert cost.sessions == 1 and cost.nodes == {'sb-n1', 'sb-n2', 'sb-n3'}
    assert 'node-minutes: 3 node(s) measured again, 1 session(s)' in \
        cost.line()
    # a session of two nodes that took 90 s costs 3 node-minutes
    pair = confirm.Cost()
    clock = iter([0.0, 90.0])
    confirm.timed(lambda phase: phase, pair, lambda: next(clock))(
        phases[0].__class__('sb', 'hbv4', 'pair', [('sb-n1', 'sb-n2')]))
    assert pair.line() == ('confirming cost 3.0 node-minutes: 2 node(s) '
                           'measured again, 1 session(s)')
    drains, notes = session.plan_drains(verdict_list, 1, {PARTITION})
    assert [d['node'] for d in drains] == ['sb-n3'] and notes == []
    lines = summary.apart_lines(verdict_list)
    assert lines[0] == ('confirmed (failed again when measured again '
                        'alone): 1 finding(s)')
    assert lines[1].startswith('  sb-n3 StreamCheck triad_bw: peers: 16.')
    # its verdict rows: the first run's row and the confirmation's fail
    rows = compare.verdict_rows(decided, 's1', findings)
    assert [(r['check_perf_result'], r['check_job_nodelist'],
             r['judged_record_id']) for r in rows] == [
        ('fail', ['sb-n3'], 'sb-n3-triad_bw'), ('fail', ['sb-n3'], 'sb-n3-2')]
    assert rows[1]['check_fail_reason'].startswith(
        'measured again beside its controls (their median 12,385 MB/s): '
        '10,390 MB/s, still failing against the first run (16.1% below the '
        "4 peers' median")


def test_a_re_run_is_held_at_the_first_run_level_of_its_controls():
    # the first run: sb-n3 16 % below its peers (noise: it measures like
    # them again); then the host runs 16 % slower for a while, every node
    # alike: held against the first median, its re-run would fail again
    first = [12400.0, 12370.0, 10382.9, 12350.0, 12380.0]
    slower = {n: round(v * 0.84, 1) for n, v in zip(NODES, first)}
    slower['sb-n3'] = round(12370.0 * 0.84, 1)
    verdict_list, _, findings, phases, _ = judged_run(first, slower)
    by_node = {v.node: v for v in verdict_list}
    assert by_node['sb-n3'].verdict == verdicts.FLAKY
    [n3] = [f for f in findings if f.node == 'sb-n3' and f.verdict == FAIL]
    assert n3.confirmations == ['pass (10390.8, its controls 10403.4)']
    # still 16 % below its controls now: bad
    verdict_list, _, findings, _, _ = judged_run(
        first, {**slower, 'sb-n3': round(10382.9 * 0.84, 1)})
    assert {v.node: v.verdict for v in verdict_list}['sb-n3'] == \
        verdicts.BAD
    # a partition that measures one node at a time runs them one by one
    *_, phases, _ = judged_run(first, slower, one_at_a_time={'hbv4'})
    assert phases[0].options == ['--exec-policy', 'serial']


def test_a_flag_that_does_not_repeat_is_flaky_never_drained():
    verdict_list, decided, findings, _, _ = judged_run(
        [12400.0, 12370.0, 10382.9, 12350.0, 12380.0], {'sb-n3': 12360.0})
    by_node = {v.node: v for v in verdict_list}
    assert by_node['sb-n3'].verdict == verdicts.FLAKY
    assert [v.verdict for v in verdict_list][0] == verdicts.FLAKY
    drains, notes = session.plan_drains(verdict_list, 5, {PARTITION})
    assert drains == [] and notes == []
    assert reporting.plan(verdict_list) == []      # never reported to Azure
    document = summary.summary_document('s1', 0, verdict_list, [], [], [],
                                        [], findings)
    assert document['counts']['nodes'][verdicts.FLAKY] == 1
    [flaky] = document['apart']['flaky']
    assert (flaky['node'], flaky['metric'], flaky['confirmations'],
            flaky['confirmed']) == ('sb-n3', 'triad_bw',
                                 ['pass (12360, its controls 12385)'], False)
    assert document['apart']['confirmed'] == []
    table = '\n'.join(summary.table_lines(verdict_list, []))
    assert re.search(r'^sb-n3 +StreamCheck +triad_bw +10382\.9 MB/s .* flaky +'
                     r'passed when measured again; first: peers: 16\.', table,
                     re.M), table
    # acceptance writes a verdict row of its own: flaky, with the first
    # reason; the judged row is never rewritten
    [verdict_row] = compare.verdict_rows(decided, 's1', findings)
    assert verdict_row['check_perf_result'] == 'flaky'
    assert verdict_row['check_result'] == 'pass'
    assert verdict_row['check_fail_reason'].startswith(
        'passed when measured again; first: 16.')
    assert verdict_row['judged_record_id'] == 'sb-n3-triad_bw'


def test_an_unconfirmed_bad_node_is_shown_apart_and_not_drained():
    verdict_list, _, _, _, _ = judged_run(
        [12400.0, 12370.0, 10382.9, 12350.0, 12380.0])
    bad = next(v for v in verdict_list if v.node == 'sb-n3')
    assert bad.verdict == verdicts.BAD and not bad.confirmed
    drains, notes = session.plan_drains(verdict_list, 5, {PARTITION})
    assert drains == []
    assert notes == ['not drained, bad but not confirmed (measured once; '
                     '--confirm N measures again before a drain): sb-n3']
    lines = summary.apart_lines(verdict_list, confirm=0)
    assert lines[0] == ('not confirmed (measured once, --confirm 0: not '
                        'drained or reported): 1 finding(s)')


def test_too_few_peers_and_no_reference_is_not_judged():
    # --min-peers 5: five nodes are four peers each, one too few
    verdict_list, decided, findings, _, _ = judged_run(
        [12400.0, 12370.0, 10382.9, 12350.0, 12380.0], min_peers=5)
    assert {v.verdict for v in verdict_list} == {verdicts.NOT_JUDGED}
    counts = summary.node_counts(verdict_list)
    assert summary.count_line(counts, summary.check_counts(findings)) \
        .startswith('5 node(s): 0 bad, 0 suspect, 0 flaky, 5 not judged, ')
    assert session.plan_drains(verdict_list, 5, {PARTITION}) == ([], [])
    assert reporting.plan(verdict_list) == []
    lines = summary.apart_lines(verdict_list)
    assert lines[0] == ('not judged (no reference, and peers could not '
                        'say): 5 finding(s)')
    # acceptance's own rows say so, one per judged row, with why
    rows = compare.verdict_rows(decided, 's1', findings)
    assert sorted((r['check_perf_result'], r['check_result'],
                   r['judged_record_id']) for r in rows) == [
        ('not_judged', None, f'{n}-triad_bw') for n in NODES]
    assert all(r['check_fail_reason'].startswith('not judged by peers: 4 '
                                                 'peers') for r in rows)
    assert 'not judged by peers: ' in lines[1]
    # a published reference judges it: then it is judged, and good
    rows = [row(n, 12400.0) for n in NODES]
    published = [Finding(node=r['check_job_nodelist'][0],
                         partition=PARTITION, check='StreamCheck',
                         verdict=PASS, metric='triad_bw', basis='published',
                         record_id=r['record_id']) for r in rows]
    decided = compare.peer_judgements(rows, peers.Rules(peers.Rule(
        min_peers=5)))
    assert compare.not_judged_findings(decided, published) == []


def test_each_flagged_node_runs_again_only_the_checks_it_failed():
    def failed(node, check):
        return Finding(node=node, partition=PARTITION, check=check,
                       verdict=FAIL, kind='rule', reason='health: x')
    findings = [failed('sb-n2', 'GpuNvlink'), failed('sb-n3', 'GpuInventory'),
                failed('sb-n4', 'GpuNvlink'), failed('sb-n5', 'GpuDiag'),
                failed('sb-n5', 'GpuNvlink')]
    nodes = {PARTITION: {n: 'idle' for n in NODES}}
    phases, said = [], []

    def run_phase(phase):
        phases.append(phase)
        return phase

    confirm.confirm(1, findings, [], nodes, run_phase,
                    lambda results: ([], [], []), said.append)
    assert [(p.pins, p.names, p.tag) for p in phases] == [
        ([('sb-n5',)], ('GpuDiag', 'GpuNvlink'), 'confirm-1-1'),
        ([('sb-n3',)], ('GpuInventory',), 'confirm-1-2'),
        ([('sb-n2',), ('sb-n4',)], ('GpuNvlink',), 'confirm-1-3')]
    assert said[2] == ('confirming 2 node(s) of sb:hbv4 (attempt 1 of 1): '
                       'GpuNvlink on sb-n2, sb-n4')
