"""`clusterproof acceptance` on the sandbox's ndv5 with pretend GPUs
(CLUSTERPROOF_SANDBOX_GPUS): the nvbandwidth stand-in replays a real 8-GPU
output (tests/support/data/nvbandwidth), checking its own command line, and on one
node halves one GPU's host copies, as a PCIe link trained down to half its
width would. Acceptance must name that node and that GPU, and nothing
else."""
from tests.support.acceptance_runs import (NODES, acceptance, expected,
                                           verdict_of)
from tests.support.helpers import stored_rows

COPY_ONLY = ['--checks', 'checks/gpu/copy_bandwidth.py']


def test_one_slow_gpu_of_one_node_is_named_and_no_other(sandbox_env):
    env = {**sandbox_env, 'CLUSTERPROOF_SANDBOX_GPUS': '8',
           'CLUSTERPROOF_STANDIN_SLOW_GPU_SB_N4': '3'}
    result, summary = acceptance(env, '--system', 'sandbox', '--partition',
                                 'ndv5', *COPY_ONLY)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert verdict_of(summary) == expected('good', {'sb-n4': 'bad'}), out
    [bad] = [n for n in summary['nodes'] if n['node'] == 'sb-n4']
    failing = {(f['check'], f['metric']) for f in bad['findings']
               if f['verdict'] == 'fail'}
    # GPU 3's host-to-device and device-to-host copies, nothing else
    assert failing == {('GpuCopyBandwidth', 'h2d_bw_gpu3'),
                       ('GpuCopyBandwidth', 'd2h_bw_gpu3')}, out
    bases = {(f['metric'], f['basis']) for f in bad['findings']
             if f['verdict'] == 'fail'}
    # the node alone names it (siblings); the other nodes' GPU 3 agree
    assert {('h2d_bw_gpu3', 'siblings'), ('d2h_bw_gpu3', 'siblings')} <= \
        bases, bad['findings']
    assert {basis for _, basis in bases} <= {'siblings', 'peers'}
    rows = stored_rows_of(env)
    # one row per GPU and metric on every node, with the GPU's index
    mine = [r for r in rows if r['check_name'] == 'GpuCopyBandwidth'
            and r['facility'] == 'reframe' and r['check_perf_value']
            is not None]
    assert {(r['check_perf_var'], r['device']) for r in mine} == {
        (metric, f'gpu{i}') for metric in ('h2d_bw', 'd2h_bw',
                                           'p2p_read_bw')
        for i in range(8)}
    assert {r['gpu_index'] for r in mine} == set(range(8))
    slow = [r for r in mine if r['check_job_nodelist'] == ['sb-n4']
            and r['device'] == 'gpu3' and r['check_perf_var'] == 'h2d_bw']
    # line 25 of the recording: 55.30 GB/s, halved; measured again alone
    # (--confirm 1, the default), it is as slow: confirmed
    assert [r['check_perf_value'] for r in slow] == [27.65, 27.65]
    assert {(f['node'], f['metric']) for f in summary['apart']['confirmed']} \
        == {('sb-n4', 'h2d_bw_gpu3'), ('sb-n4', 'd2h_bw_gpu3')}
    # peaks.yaml's ND H100 v5 NVLink figure, per direction, on P2P rows
    assert {(r['check_perf_peak'], r['peak_source'].split(' (')[0])
            for r in mine if r['check_perf_var'] == 'p2p_read_bw'} == {
        (450.0, 'NVLink 4, 900 GB/s bidirectional = 450 GB/s per '
                'direction')}
    assert {r['check_perf_peak'] for r in mine
            if r['check_perf_var'] == 'h2d_bw'} == {None}
    # the sandbox cannot lock clocks as the health checks do: the floors
    # are shown, not judged
    assert {r['check_perf_result'] for r in mine} == {'informational'}
    verdict_rows = [r for r in rows if r.get('verdict_basis') == 'siblings']
    assert {(r['check_job_nodelist'][0], r['device'])
            for r in verdict_rows} == {('sb-n4', 'gpu3')}


def stored_rows_of(env):
    from pathlib import Path
    return stored_rows(Path(env['CLUSTERPROOF_HOME']))


# --- the compute check on its own, on the sandbox ---------------------------

def run_compute(tmp_path, slurm_sandbox, gpus, check='compute.py',
                name='GpuComputeQuick', **env):
    """GpuComputeQuick (or *name* of checks/gpu/*check*) on one sandbox
    ndv5 node with *gpus* pretend GPUs; the stand-ins replay real outputs
    (gpu_burn: tests/support/data/gemm-burn)."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path
    from tests.support.helpers import REPO, STANDINS, suite_env
    environ = suite_env(tmp_path / 'home', {
        **slurm_sandbox.env, 'CLUSTERPROOF_SANDBOX_GPUS': str(gpus),
        'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}', **env})
    done = subprocess.run(
        [str(Path(sys.executable).parent / 'reframe'), '-C',
         str(REPO / 'config' / 'config.py'), '--system', 'sandbox:ndv5',
         '-c', f'checks/gpu/{check}', '-n', name, '-r',
         '--prefix', str(tmp_path / 'rfm')], env=environ, cwd=str(REPO),
        capture_output=True, text=True, timeout=600)
    return done, re.sub(r'\x1b\[[0-9;]*m', '', done.stdout + done.stderr)


def test_compute_gives_each_gpu_its_gemm_rate(tmp_path, slurm_sandbox):
    done, out = run_compute(tmp_path, slurm_sandbox, 8)
    assert done.returncode == 0, out
    # the last progress record of the recording (line 21)
    assert 'P: gflops_gpu0: 16942.0 Gflop/s' in out
    assert 'P: gflops_gpu1: 17093.0 Gflop/s' in out
    assert 'P: errors_gpu7: 0.0 count' in out
    rows = [r for r in stored_rows_of({'CLUSTERPROOF_HOME':
                                       str(tmp_path / 'home')})
            if r['check_perf_var'] == 'gflops'
            and r['check_perf_value'] is not None]
    assert sorted(r['device'] for r in rows) == [f'gpu{i}' for i in
                                                 range(8)]
    # gpu_burn is the tool of the key: no published level judges it
    assert {r['check_perf_result'] for r in rows} == {'no_reference'}
    assert {r['reference_key'].split('|')[2] for r in rows} == {
        'precision=double+tensor_cores,seconds=60,tool=gpu_burn'}
    script = next((tmp_path / 'rfm').rglob('rfm_job.sh')).read_text()
    assert '\ngpu_burn -d -tc 60\n' in script


def test_faulty_gpus_fail_the_run_by_name_whatever_the_exit_code(
        tmp_path, slurm_sandbox):
    from tests.support.helpers import REPO
    faulty = REPO / 'tests' / 'support' / 'data' / 'gemm-burn' / \
        'gpu_burn-16GPU-all-FAULTY-negative-error-counts-issue12-excerpt.out'
    done, out = run_compute(tmp_path, slurm_sandbox, 16,
                            CLUSTERPROOF_REPLAY_GPU_BURN=str(faulty))
    assert done.returncode != 0, out
    assert 'sanity error: gpu_burn calls GPU 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ' \
        '10, 11, 12, 13, 14, 15 FAULTY; GPU 1: -524288000 compute ' \
        'errors' in out


def test_hbm_bandwidth_per_gpu_with_the_hbm_peak(tmp_path, slurm_sandbox):
    """One cuda-stream per GPU (the stand-in replays the A100 BabelStream
    5.0 run, tests/support/data/babelstream, line 134: Triad
    1377517.491 MB/s)."""
    done, out = run_compute(tmp_path, slurm_sandbox, 8,
                            check='hbm_bandwidth.py',
                            name='GpuMemoryBandwidth')
    assert done.returncode == 0, out
    rows = [r for r in stored_rows_of({'CLUSTERPROOF_HOME':
                                       str(tmp_path / 'home')})
            if r['check_perf_var'] == 'triad_bw'
            and r['check_perf_value'] is not None]
    assert sorted(r['device'] for r in rows) == [f'gpu{i}' for i in
                                                 range(8)]
    assert {r['check_perf_value'] for r in rows} == {1377.517491}
    # peaks.yaml's ND H100 v5 HBM3 figure; the Guide's Triad shown only
    assert {r['check_perf_peak'] for r in rows} == {3350.0}
    assert {(r['check_perf_ref'], r['check_perf_result'])
            for r in rows} == {(2970.0, 'informational')}
