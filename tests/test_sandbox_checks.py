"""The CPU/MPI checks through real ReFrame on the real sandbox
Slurm. HPCC (Debian's hpcc, real Open MPI over srun --mpi=pmix) runs for
real; STREAM, HPL, HPCG, the OSU micro-benchmarks and mpi-stage cannot be
installed here, so replay stand-ins (tests/standins/cpu_mpi_replay) print
real outputs from tests/data in their place: what is tested is the checks'
job layout, sanity, perf variables, references and records."""
import os

import pytest

from tests.helpers import REPO, STANDINS, run_reframe, stored_rows


def run_on_sandbox(slurm_sandbox, tmp_path, partition, *args):
    env = {**os.environ, **slurm_sandbox.env,
           'CLUSTERPROOF_HOME': str(tmp_path / 'home'),
           'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}'}
    for name in ('RFM_SYSTEM', 'DATA_COLLECTION_ENDPOINT', 'LOGS_DCR_RULE_ID'):
        env.pop(name, None)
    result = run_reframe('--system', f'sandbox:{partition}', *args, '-r',
                         '--prefix', str(tmp_path / 'rfm'),
                         env=env, cwd=str(REPO))
    rows = stored_rows(tmp_path / 'home')
    return result, rows


def values(rows, check_name):
    return {row['check_perf_var']: row['check_perf_value']
            for row in rows if row['check_name'] == check_name}


@pytest.fixture(scope='module')
def cpu_mpi_run(slurm_sandbox, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('cpu_mpi')
    result, rows = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4',
        '-c', 'checks/cpu', '-c', 'checks/network/osu.py',
        '-c', 'checks/staging',
        '-n', '^HpccTwoNodes$', '-n', '^HplCheck$', '-n', '^HpcgCheck$',
        '-n', 'OsuPointToPoint%buffer=cpu', '-n', 'OsuCollective%buffer=cpu',
        '-n', '^MpiStageCheck$')
    return result, rows


def test_every_check_passes(cpu_mpi_run):
    result, rows = cpu_mpi_run
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'Ran 9/9 test case(s)' in output, output
    assert {row['check_result'] for row in rows} == {'pass'}
    assert {row['check_system'] for row in rows} == {'sandbox'}
    assert all(row['check_jobid'].isdigit() for row in rows)


def test_hpcc_runs_for_real_across_both_nodes(cpu_mpi_run):
    _, rows = cpu_mpi_run
    hpcc = [row for row in rows if row['check_name'] == 'HpccTwoNodes']
    measured = {row['check_perf_var']: row['check_perf_value']
                for row in hpcc}
    # real measurements: positive, and latency over loopback TCP in µs
    for name in ('HPL_Tflops', 'StarSTREAM_Triad', 'PTRANS_GBs',
                 'MPIRandomAccess_GUPs', 'AvgPingPongLatency_usec',
                 'AvgPingPongBandwidth_GBytes'):
        assert measured[name] > 0, name
    # the two nodes the job recorded (not ReFrame's first sacct poll)
    nodes = hpcc[0]['check_job_nodelist']
    assert len(set(nodes)) == 2 and set(nodes) <= {f'sb-n{i}' for i in range(1, 5)}
    assert hpcc[0]['check_num_tasks'] == 2


def test_replayed_outputs_become_perf_variables(cpu_mpi_run):
    _, rows = cpu_mpi_run
    assert values(rows, 'HplCheck') == {'gflops': 20.434}
    assert values(rows, 'HpcgCheck') == {'gflops': 4.14187}
    mpi_stage = values(rows, 'MpiStageCheck')
    assert mpi_stage['bandwidth'] == 188.663
    assert mpi_stage['no_copy_time'] == pytest.approx(0.000141425)
    osu = {row['check_params']['benchmark']: row['check_perf_value']
           for row in rows if row['check_name'].startswith('Osu')}
    assert osu == {'osu_latency': 4.50, 'osu_bw': 5600.52,
                   'osu_bibw': 9371.54, 'osu_allreduce': 0.69,
                   'osu_alltoall': 0.58}


def test_stream_is_judged_against_the_hbv4_floor(slurm_sandbox, tmp_path):
    # The sandbox's hbv4 partition declares VM SKU HB176rs_v4, whose STREAM
    # floor (Azure's health checks) a 2-core replay cannot meet: the check
    # must fail on performance, say why, and record the verdict and source.
    result, rows = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4', '-c', 'checks/cpu/stream.py',
        '-n', '^StreamCheck$', '-S', 'array_size=20000000')
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert 'performance' in output.lower()
    triad = next(row for row in rows if row['check_perf_var'] == 'triad_bw')
    assert triad['check_perf_value'] == 12369.6
    assert triad['check_perf_ref'] == 665500
    assert triad['check_perf_result'] == 'fail'
    assert 'azurehpc-health-checks' in triad['reference_source']
    assert triad['vm_sku'] == 'Standard_HB176rs_v4'


def test_a_missing_binary_fails_early_with_advice(slurm_sandbox, tmp_path):
    result, _ = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4', '-c', 'checks/cpu/hpl.py',
        '-n', '^HplCheck$', '-S', 'tool_binary=xhpl-not-installed')
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert 'xhpl-not-installed not found on node sb-n' in output
    assert 'spack install hpl' in output
