"""Health in a real acceptance run on the five-node sandbox Slurm: each
node has its own sysfs tree (built from the real procfs fixture, the sandbox
nodes share /sys) and a stand-in nvidia-smi replaying real XML; on one node
the benchmark stand-in raises link_downed and symbol_error while it runs, on
another a low STREAM runs beside a GPU thermal slowdown."""
import os
from pathlib import Path

from checks.common.health_sampling import SAMPLES_DIR
from tests.support.acceptance_runs import (LOW_STREAM, NODES, STREAM_ONLY,
                                           acceptance, by_pass, expected,
                                           verdict_of)
from tests.support.health_data import HEALTH, PORT, build_sysfs
from tests.support.helpers import (REPO, STANDINS, run_reframe, stored_rows,
                                   suite_env)


def test_rising_counters_fail_their_node_with_the_health_reason(
        sandbox_env, tmp_path):  # noqa: F811
    trees = tmp_path / 'sysfs'
    for node in NODES:
        build_sysfs(trees / node)
    counters = trees / 'sb-n3' / PORT / 'counters'
    env = {**sandbox_env,
           'CLUSTERPROOF_STANDIN_RAISE_SB_N3':
               f'{counters}/link_downed+1;{counters}/symbol_error+7',
           'CLUSTERPROOF_REPLAY_NVIDIA_SMI_XML':
               str(HEALTH / 'telegraf_a100-sxm4-v12.xml'),
           'CLUSTERPROOF_REPLAY_NVIDIA_SMI_XML_AFTER_SB_N2':
               str(HEALTH / 'a100-sxm4-v12_hw_thermal_slowdown.xml'),
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N2': str(LOW_STREAM)}
    result, summary = acceptance(
        env, '--system', 'sandbox', '--partition', 'hbv4', *STREAM_ONLY,
        '--', '-S', 'array_size=20000000',
        '-S', f'health_sysfs_root={trees}/%n')
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert verdict_of(summary) == expected('good', {'sb-n2': 'bad',
                                                    'sb-n3': 'bad'})
    reasons = {n['node']: [f['reason'] for f in n['findings']
                           if f['verdict'] == 'fail']
               for n in summary['nodes']}
    assert reasons['sb-n3'] == [
        'health: mlx5_0/1: link_downed +1 during the test']
    # the check's own verdict names what ran beside it on the node
    assert {r.split('; health: ')[1] for r in reasons['sb-n2']} == {
        'GPU 0 hw thermal slowdown active during the run'}
    assert 'below the lower bound 8000; health: GPU 0 hw thermal slowdown ' \
        'active during the run' in reasons['sb-n2']
    assert 'health: mlx5_0/1: link_downed +1 during the test' in out

    rows, again = by_pass(env, summary)
    # the two bad nodes were measured again (--confirm 1), each in a job of
    # its own, beside two good nodes as controls (sb-n2's triad failed its
    # peers too: scripts/acceptance/confirm.py); what follows reads the
    # first measurement of all five
    again = {(r['check_job_nodelist'][0], r['check_jobid']) for r in again}
    assert sorted(node for node, _ in again) == ['sb-n1', 'sb-n2', 'sb-n3',
                                                 'sb-n4']
    assert len({job for _, job in again}) == 4
    assert 'beside sb-n1, sb-n4 (controls: ' in out
    health = [r for r in rows if r['check_name'] == 'StreamCheck'
              and r['check_perf_var'] not in ('copy_bw', 'scale_bw',
                                              'add_bw', 'triad_bw')]
    changed = {(r['check_job_nodelist'][0], r['check_perf_var'],
                r['device']): r for r in health
               if r['check_perf_var'] not in ('health',
                                              'health_not_available')}
    assert set(changed) == {('sb-n3', 'link_downed', 'mlx5_0/1'),
                            ('sb-n3', 'symbol_error', 'mlx5_0/1')}
    link = changed[('sb-n3', 'link_downed', 'mlx5_0/1')]
    assert (link['check_perf_value'], link['check_perf_result'],
            link['check_perf_unit']) == (1, 'fail', 'count')
    assert changed[('sb-n3', 'symbol_error', 'mlx5_0/1')][
        'check_perf_result'] == 'no_reference'
    summaries = {(r['check_job_nodelist'][0], r['device']):
                 r['check_perf_result'] for r in health
                 if r['check_perf_var'] == 'health'}
    assert summaries == {
        **{(n, d): 'pass' for n in NODES for d in ('mlx5_0/1', 'gpu0')},
        ('sb-n3', 'mlx5_0/1'): 'fail'}
    # the sandbox has no readable journal: said once per node and job
    missing = [r for r in health
               if r['check_perf_var'] == 'health_not_available']
    assert sorted(r['check_job_nodelist'][0] for r in missing) == NODES
    assert {r['check_perf_result'] for r in missing} == {'informational'}
    assert all(r['check_fail_reason'].startswith('not available: log: ')
               for r in missing)
    # a job adds one summary row per device, plus the counters that moved
    assert len(health) == 2 * len(NODES) + 2 + len(missing)
    # every row carries the node's fingerprint, read by the job
    triad = [r for r in rows if r['check_perf_var'] == 'triad_bw'
             and r['facility'] == 'reframe']   # not acceptance's verdicts
    # the failing row itself names what ran beside it
    low = next(r for r in triad if r['check_job_nodelist'] == ['sb-n2'])
    assert low['check_perf_result'] == 'fail'
    assert low['check_fail_reason'].endswith(
        'health: GPU 0 hw thermal slowdown active during the run')
    assert {r['hca_firmware'] for r in triad + health} == {'14.28.2006'}
    assert {r['gpu_driver_version'] for r in triad} == {'535.54.03'}
    assert all(r['kernel_version'] for r in triad + health)
    # the samples are kept with the test's files (the stage directory: the
    # four nodes are one batch job, failed because of sb-n2)
    home = Path(env['CLUSTERPROOF_HOME'])
    assert list(home.rglob(f'stage/**/{SAMPLES_DIR}/after.sb-n3.txt'))


def test_a_two_node_job_samples_both_nodes(slurm_sandbox, tmp_path):
    """One srun --overlap step per node of the job: each node's own tree."""
    trees = tmp_path / 'sysfs'
    for node in NODES:
        build_sysfs(trees / node)
    env = suite_env(tmp_path / 'home', {
        **slurm_sandbox.env,
        'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}'})
    result = run_reframe(
        '--system', 'sandbox:hbv4', '-c', 'checks/network/osu.py',
        '-n', 'OsuPointToPoint%buffer=cpu%benchmark=osu_latency',
        '-S', f'health_sysfs_root={trees}/%n', '-r',
        '--prefix', str(tmp_path / 'rfm'), env=env, cwd=str(REPO))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = stored_rows(tmp_path / 'home')
    [latency] = [r for r in rows if r['check_perf_var'] == 'latency']
    nodes = latency['check_job_nodelist']
    assert len(nodes) == 2
    summaries = sorted((r['check_job_nodelist'], r['device'])
                       for r in rows if r['check_perf_var'] == 'health')
    assert summaries == sorted(([n], 'mlx5_0/1') for n in nodes)
    assert latency['hca_firmware'] == '14.28.2006'


def test_a_health_finding_is_drained_with_its_reason():
    from scripts.acceptance import session, verdicts
    case = {'name': 'StreamCheck', 'display_name':
            'StreamCheck %.pinned_nodes=sb-n3', 'system': 'sandbox',
            'partition': 'hbv4', 'environ': 'builtin', 'result': 'pass',
            'pinned_nodes': ['sb-n3'], 'job_nodes': ['sb-n3'],
            'perfvalues': {}, 'health_findings': [
                {'node': 'sb-n3', 'device': 'mlx5_0/1',
                 'metric': 'link_downed', 'severity': 'fail', 'value': 1,
                 'reference': 0,
                 'reason': 'mlx5_0/1: link_downed +1 during the test'},
                {'node': 'sb-n3', 'device': 'gpu0', 'severity': 'warn',
                 'metric': 'clock_event_hw_thermal_slowdown',
                 'reason': 'GPU 0 hw thermal slowdown active during the run'}]}
    findings = verdicts.case_findings(case, {})
    judged = verdicts.node_verdicts(findings, {'sandbox:hbv4': {
        'sb-n3': 'idle'}})
    assert [v.verdict for v in judged] == ['bad']
    # measured once, it is not drained yet: the note says why
    drains, notes = session.plan_drains(judged, 1, {'sandbox:hbv4'})
    assert drains == []
    assert notes == ['not drained, bad but not confirmed (measured once; '
                     '--confirm N measures again before a drain): sb-n3']
    # failed again when measured again (--confirm): drained with its reason
    [link] = [f for f in findings if f.kind == 'link_downed']
    link.confirmations = ['fail']
    drains, _ = session.plan_drains(judged, 1, {'sandbox:hbv4'})
    assert drains == [{'node': 'sb-n3', 'reason':
                       'clusterproof acceptance: StreamCheck health: '
                       'mlx5_0/1: link_downed +1 during the test'}]
    # a warning alone (a thermal slowdown beside a passing check) is named
    # nowhere as a failure: the node stays good
    case['health_findings'] = case['health_findings'][1:]
    judged = verdicts.node_verdicts(verdicts.case_findings(case, {}),
                                    {'sandbox:hbv4': {'sb-n3': 'idle'}})
    assert [v.verdict for v in judged] == ['good']
