"""One ReFrame case per check and batch of nodes, for real on the sandbox
Slurm: the case's one job runs the check on each node of its allocation
(one job step per node) and reports per node, and its rows and verdicts
are those the one-node cases give (one node slow fails on its peers, one
node's bad output makes only that node bad). Plus the job-script and
judging rules on their own."""
import json
import re

import pytest

from checks.common import fan_out, measurements
from scripts.acceptance import plan, verdicts
from scripts.cli.sandbox import NODES
from scripts.comparison import peers
from tests.support.acceptance_runs import (BUSY_STREAM, ONE_THREAD_STREAM,
                                           SANDBOX_METHOD, STREAM_ONLY,
                                           acceptance, changes, comparable,
                                           no_references, one_batch_job,
                                           stored, verdict_of)
from tests.support.sandbox_runs import RECORDED_SIZES, run_on_sandbox

NODES = list(NODES)
SLOW, BROKEN = NODES[2], NODES[1]
ARGS = ['--system', 'sandbox', '--partition', 'hbv4', *STREAM_ONLY,
        '--drain', '--dry-run', '--min-peers', '3',
        # the batch against the one-by-one rows: no confirmation run beside
        '--confirm', '0']


# --- the rules on their own -------------------------------------------------

def test_one_step_per_node_in_the_launchers_own_spelling():
    assert fan_out.step_launcher('srun', 'slurm', 2, None, ['--mpi=pmix'],
                                 'hb-7') == [
        'srun', '--nodes=1', '--ntasks=2', '--nodelist=hb-7', '--mpi=pmix']
    # one multi-threaded process from the batch shell: an srun step anyway
    assert fan_out.step_launcher('local', 'slurm', 1, 48, ['-x'], 'hb-7') \
        == ['srun', '--nodes=1', '--ntasks=1', '--nodelist=hb-7',
            '--cpus-per-task=48']
    assert fan_out.step_launcher('mpirun', 'pbs', 4, None,
                                 ['--bind-to', 'core'], 'cn1') == [
        'mpirun', '-np', '4', '--host', 'cn1:4', '--bind-to', 'core']
    assert fan_out.step_launcher('local', 'pbs', 1, None, [], 'cn1') is None
    assert fan_out.step_launcher('ibrun', 'slurm', 1, None, [], 'x') is None


def test_script_lines_run_every_node_in_its_own_directory_at_once():
    nodes = ['hb-1', 'hb-2']
    steps = {n: ['srun', f'--nodelist={n}'] for n in nodes}
    lines = fan_out.script_lines(nodes, steps, 'xhpl -v',
                                 ('rfm_job.out', 'rfm_job.err'))
    assert lines[0] == 'mkdir -p fanout/hb-1 fanout/hb-2'
    # the stage files linked in, but not the job's own output
    assert 'rfm_job.out|rfm_job.err) continue' in lines[1]
    assert lines[2:] == [
        f'(cd fanout/{n} && srun --nodelist={n} xhpl -v > step.out '
        f'2> step.err; echo $? > exit_code) &' for n in nodes]


def test_a_step_that_measured_nothing_says_why(tmp_path):
    assert fan_out.unmeasured_reason('hb-1', 0, '') is None
    assert fan_out.unmeasured_reason('hb-1', 1, 'boom') is None  # the parser's
    assert 'hb-1' in fan_out.unmeasured_reason('hb-1', None, '')
    assert fan_out.unmeasured_reason('hb-1', 127, 'xhpl: not found') == \
        'tool missing: not found on node hb-1: xhpl: not found'
    (tmp_path / 'exit_code').write_text('127\n')
    assert fan_out.read_exit_code(str(tmp_path / 'exit_code')) == 127
    assert fan_out.read_exit_code(str(tmp_path / 'none')) is None
    (tmp_path / 'err').write_text('a\n' + 'x' * 100_000 + '\nlast\n\n')
    assert fan_out.last_line(str(tmp_path / 'err')) == 'last'


def test_a_batch_cases_variables_are_one_metric_on_one_node():
    nodes = {'triad_bw@hb-3': 'hb-3', 'bw_avg_mlx5_0@hb-3': 'hb-3'}
    assert measurements.split_group('triad_bw@hb-3', nodes) == ('triad_bw', 'hb-3')
    assert measurements.split_group('triad_bw', nodes) == ('triad_bw', None)
    assert measurements.split_device(
        measurements.split_group('bw_avg_mlx5_0@hb-3', nodes)[0],
        {'bw_avg_mlx5_0': 'mlx5_0'}) == ('bw_avg', 'mlx5_0')


def batch_case(**more):
    nodes = ['hb-1', 'hb-2', 'hb-3', 'hb-4']
    perf = {f'triad_bw@{n}': [v, 100.0, -0.1, None, 'MB/s',
                              'pass' if v >= 90 else 'fail']
            for n, v in (('hb-1', 101.0), ('hb-4', 50.0))}
    return {'name': 'StreamCheck', 'display_name':
            f"StreamCheck %.pinned_nodes={','.join(nodes)}",
            'system': 'azure', 'partition': 'hbv4', 'environ': 'builtin',
            'jobid': '7', 'pinned_nodes': nodes, 'job_nodes': nodes,
            'fans_out': True, 'fanned_groups': nodes, 'result': 'fail',
            'fail_phase': 'performance',
            'fail_reason': 'reference not met (hb-4)',
            'perfvalues': {f'azure:hbv4:{k}': v for k, v in perf.items()},
            'metric_groups': {k: k.split('@')[1] for k in perf},
            'group_failures': {'hb-2': 'stream output has no Triad line'},
            'groups_not_measured': {
                'hb-3': 'tool missing: not found on node hb-3'}, **more}


def test_each_node_of_a_batch_case_has_its_own_finding():
    found = {f.node: f for f in verdicts.case_findings(batch_case(), {})}
    assert {n: (f.verdict, f.metric) for n, f in found.items()} == {
        'hb-1': ('pass', 'triad_bw'), 'hb-2': ('fail', None),
        'hb-3': ('not_measured', None), 'hb-4': ('fail', 'triad_bw')}
    assert found['hb-2'].reason == 'stream output has no Triad line'
    assert found['hb-3'].reason == 'tool missing: not found on node hb-3'
    assert found['hb-4'].reason == 'below the lower bound 90'
    assert found['hb-4'].value == 50.0 and found['hb-1'].value == 101.0
    assert {f.check for f in found.values()} == {'StreamCheck'}
    nodes = {'azure:hbv4': {n: 'idle' for n in found}}
    assert {v.node: v.verdict for v in verdicts.node_verdicts(
        list(found.values()), nodes)} == {
        'hb-1': 'good', 'hb-2': 'bad', 'hb-3': 'not_measured', 'hb-4': 'bad'}


def test_a_batch_job_that_never_started_leaves_every_node_unmeasured():
    case = batch_case(job_nodes=[], perfvalues={}, metric_groups={},
                      group_failures={}, groups_not_measured={},
                      fail_phase='sanity',
                      fail_reason='the batch job never started')
    assert {(f.node, f.verdict) for f in verdicts.case_findings(case, {})} \
        == {(n, 'not_measured') for n in case['pinned_nodes']}


def test_the_plans_fan_out_checks_are_those_that_fan_out():
    import reframe  # noqa: F401  (the check modules need it)
    from checks.cpu import hpcc, hpcg, hpl, stream
    from checks.gpu import (compute, copy_bandwidth, gpu_node, hbm_bandwidth,
                            nccl, nvlink_fabric)
    from checks.network import perftest
    classes = {c.__name__: c for m in (hpcc, hpcg, hpl, stream, nccl,
                                       nvlink_fabric, perftest, compute,
                                       copy_bandwidth, hbm_bandwidth,
                                       gpu_node)
               for c in vars(m).values() if isinstance(c, type)}
    def fans_out(cls):
        space = getattr(cls, 'var_space', {})
        return 'fans_out' in space and \
            space['fans_out'].default_value is True
    fanning = {name for name in plan.NODE_CHECKS if fans_out(classes[name])}
    assert fanning == set(plan.FANOUT_CHECKS)
    assert set(plan.SINGLE_NODE_CHECKS) == {
        'NvlinkFabric', 'GpuCopyBandwidth', 'GpuMemoryBandwidth',
        'GpuComputeQuick', 'GpuComputeBurn', 'GpuInventory', 'GpuNvlink',
        'GpuDiag', 'GpuDiagDaily'}


# --- for real ----------------------------------------------------------------

def node_rows(env):
    """(check, metric, node) -> (value, result), and what peers group by
    (without the session), of the measured rows."""
    rows = [r for r in stored(env) if r['facility'] == 'reframe'
            and r['check_perf_value'] is not None]
    return ({(r['check_name'], r['check_perf_var'],
              tuple(r['check_job_nodelist'])):
             (r['check_perf_value'], r['check_perf_result'],
              r['check_num_tasks'], r['check_perf_unit'], r['device'],
              r['check_perf_ref'])
             for r in rows},
            {peers.group_of(r)[1:] for r in rows})


def findings(summary):
    return sorted((f['node'], f['check'], f['metric'], f['verdict'],
                   f['basis'], f['reason']) for n in summary['nodes']
                  for f in n['findings'] if f['verdict'] != 'pass')


def test_a_batch_case_judges_each_node_as_one_node_cases_do(sandbox_env,
                                                            tmp_path):
    env = {**no_references(sandbox_env),
           f'CLUSTERPROOF_REPLAY_STREAM_C_EXE_{SLOW.upper().replace("-", "_")}':
           str(BUSY_STREAM),
           # one thread where two were asked: STREAM's sanity fails there
           f'CLUSTERPROOF_REPLAY_STREAM_C_EXE_{BROKEN.upper().replace("-", "_")}':
           str(ONE_THREAD_STREAM)}
    single_env = {**env, 'CLUSTERPROOF_HOME': str(tmp_path / 'single')}
    single, single_summary = acceptance(single_env, *ARGS, '--node-batch',
                                        '1', *SANDBOX_METHOD)
    batch, summary = acceptance(env, *ARGS, *SANDBOX_METHOD)
    for result in (single, batch):
        assert result.returncode == 1, result.stdout + result.stderr
    expected = {node: 'good' for node in NODES}
    expected.update({SLOW: 'bad', BROKEN: 'bad'})
    assert verdict_of(summary) == verdict_of(single_summary) == expected
    assert findings(summary) == findings(single_summary)
    slow = [f for f in findings(summary) if f[0] == SLOW and f[3] == 'fail']
    # STREAM's triad is its primary metric (copy, scale, add recorded only)
    assert {(f[2], f[4]) for f in slow} == {('triad_bw', 'peers')}
    [broken] = [f for f in findings(summary) if f[0] == BROKEN
                and f[3] == 'fail']
    assert broken[3] == 'fail' and broken[4] is None and 'thread' in broken[5]
    # the same rows, node by node, grouped the same way for peers
    assert node_rows(env) == node_rows(single_env)
    # and every other column as a one-node job writes it
    batch_rows = {(r['check_perf_var'], tuple(r['check_job_nodelist'])):
                  comparable(r) for r in stored(env)
                  if r['facility'] == 'reframe'}
    single_rows = {(r['check_perf_var'], tuple(r['check_job_nodelist'])):
                   comparable(r) for r in stored(single_env)
                   if r['facility'] == 'reframe'}
    assert set(batch_rows) == set(single_rows)
    differ = {key: changes(row, single_rows[key])
              for key, row in batch_rows.items()}
    # (but a node whose output failed sanity: its row's method fingerprint
    # and reference key are the batch's, read from a node that passed)
    assert {key: d for key, d in differ.items() if d and key[1] != (BROKEN,)
            } == {}
    assert set(differ[('triad_bw', (BROKEN,))]) <= {'check_params',
                                                     'reference_key'}
    values, _ = node_rows(env)
    assert {key[2] for key in values} == {(n,) for n in NODES if n != BROKEN}
    assert values[('StreamCheck', 'triad_bw', (SLOW,))][0] == 10382.9

    # one case, one job, one step per node, each with its own output
    script = one_batch_job(batch, env, 'StreamCheck')
    text = script.read_text()
    assert f'#SBATCH --ntasks={len(NODES)}' in text
    assert '#SBATCH --ntasks-per-node=1' in text
    steps = re.findall(r'^\(cd fanout/(\S+) && srun --nodes=1 --ntasks=1 '
                       r'--nodelist=(\S+) --cpus-per-task=2 --mpi=pmix '
                       r'stream_c\.exe > step\.out 2> step\.err; echo \$\? > '
                       r'exit_code\) &$', text, re.M)
    assert steps == [(n, n) for n in NODES]
    assert text.index('exit_code) &') < text.index('\nwait\n')
    out = script.parent / 'fanout'
    assert '10382.9' in (out / SLOW / 'step.out').read_text()
    assert {(out / n / 'exit_code').read_text().strip() for n in NODES} \
        == {'0'}


def test_hpl_and_hpcg_batches_find_their_inputs_and_keep_their_reports(
        slurm_sandbox, tmp_path):
    result, rows = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4', '-c', 'checks/cpu/hpl.py',
        '-c', 'checks/cpu/hpcg.py', '-n', '^HplCheck$', '-n', '^HpcgCheck$',
        '-P', f"pinned_nodes={','.join(NODES)}", '--param-values-delim',
        ';', *RECORDED_SIZES)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'Ran 2/2 test case(s)' in output, output
    found = {(r['check_name'], r['check_perf_var'],
              tuple(r['check_job_nodelist'])): r['check_perf_value']
             for r in rows}
    # HPL read its HPL.dat (linked into each node's directory: the
    # stand-in refuses another problem), HPCG wrote its report there
    expected = {('HplCheck', 'gflops', (n,)): 20.434 for n in NODES}
    expected.update({('HpcgCheck', 'gflops', (n,)): 4.14187 for n in NODES})
    assert {k: v for k, v in found.items() if k[1] == 'gflops'} == expected
    # a check's own perf variables too (HPL's efficiency against its peak)
    efficiency = {k[2]: v for k, v in found.items() if k[1] == 'efficiency'}
    assert set(efficiency) == {(n,) for n in NODES}
    assert len(set(efficiency.values())) == 1
    # each row as a one-node job's: two ranks
    assert {r['check_num_tasks'] for r in rows} == {2}
    reports = list((tmp_path / 'rfm').rglob('fanout/*/HPCG-Benchmark*'))
    assert len(reports) == len(NODES)


def test_an_nccl_batch_job_runs_eight_ranks_on_each_gpu_node(tmp_path):
    """No GPU here: the job script of a batch of two ND H100 v5 nodes."""
    from tests.support.dry_runs import dry_run
    dry_run(tmp_path, 'azure:ndv5', '-n', '^NcclSingleNode%collective=all_reduce',
            '-P', 'pinned_nodes=nd-1,nd-2', '--param-values-delim', ';',
            '--report-file', str(tmp_path / 'report.json'),
            checks=('checks/gpu/nccl.py',))
    # a dry run measures nothing: one perf variable per metric, not one per
    # metric and node (ReFrame logs a record for each, even in a dry run)
    [case] = json.loads((tmp_path / 'report.json').read_text()
                        )['runs'][0]['testcases']
    names = [key.split(':')[-1] for key in case['perfvalues']]
    assert names and not [name for name in names if '@' in name], names
    [script] = [p for p in (tmp_path / 'rfm' / 'stage').rglob('rfm_job.sh')]
    text = script.read_text()
    for line in ('#SBATCH --ntasks=16', '#SBATCH --ntasks-per-node=8',
                 '#SBATCH --gres=gpu:8', '#SBATCH --nodelist=nd-[1-2]'):
        assert line in text, text
    steps = re.findall(r'^\(cd fanout/(nd-\d) && srun --nodes=1 --ntasks=8 '
                       r'--nodelist=(nd-\d) (.*) > step\.out 2> step\.err; '
                       r'echo \$\? > exit_code\) &$', text, re.M)
    assert [(a, b) for a, b, _ in steps] == [('nd-1', 'nd-1'),
                                             ('nd-2', 'nd-2')]
    # the check's own command, unchanged, on each node
    assert steps[0][2] == steps[1][2] and 'all_reduce_perf' in steps[0][2]
    assert '\nwait\n' in text
