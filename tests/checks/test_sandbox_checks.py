"""The CPU/MPI checks through real ReFrame on the real sandbox
Slurm. HPCC (Debian's hpcc, real Open MPI over srun --mpi=pmix) runs for
real; STREAM, HPL, HPCG, the OSU micro-benchmarks and mpi-stage cannot be
installed here, so replay stand-ins (tests/support/standins/cpu_mpi_replay) print
real outputs from tests/support/data in their place: what is tested is the checks'
job layout, sanity, perf variables, references and records."""
import textwrap

import pytest

from scripts.cli import sandbox
from tests.support.helpers import read_data
from tests.support.sandbox_runs import RECORDED_SIZES, run_on_sandbox


def site_references(directory, files: dict):
    """A CLUSTERPROOF_REFERENCES directory holding ``files``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text))
    return str(directory)


def values(rows, check_name):
    return {row['check_perf_var']: row['check_perf_value']
            for row in rows if row['check_name'] == check_name}


# A site's peak for the sandbox's SKU (HBv4's base clock is not in the
# shipped data): HPL's row must carry it and its efficiency follow from it.
SITE_HPL_PEAK = """
    sources:
      Site: "site figure for the test"
    HB176rs_v4:
      hpl:
        gflops: {value: 64, unit: Gflops, source: Site, derivation: "2 cores x 2 GHz x 16"}
"""


@pytest.fixture(scope='module')
def cpu_mpi_run(slurm_sandbox, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('cpu_mpi')
    references = site_references(tmp_path / 'site',
                                 {'peaks.yaml': SITE_HPL_PEAK})
    result, rows = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4',
        '-c', 'checks/cpu', '-c', 'checks/network/osu.py',
        '-c', 'checks/staging',
        '-n', '^HpccTwoNodes$', '-n', '^HplCheck$', '-n', '^HpcgCheck$',
        '-n', 'OsuPointToPoint%buffer=cpu',
        # OMB -c is recorded for allreduce only (tests/support/standins)
        '-n', 'OsuCollective%buffer=cpu%benchmark=osu_allreduce',
        '-n', '^MpiStageCheck$', *RECORDED_SIZES,
        # real hpcc: a memory-sized run would take minutes here
        '-S', 'HpccTwoNodes.size_profile=smoke',
        extra_env={'CLUSTERPROOF_REFERENCES': references})
    return result, rows


def test_every_check_passes(cpu_mpi_run):
    result, rows = cpu_mpi_run
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'Ran 8/8 test case(s)' in output, output
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
    assert len(set(nodes)) == 2 and set(nodes) <= set(sandbox.NODES)
    assert hpcc[0]['check_num_tasks'] == 2


def test_replayed_outputs_become_perf_variables(cpu_mpi_run):
    _, rows = cpu_mpi_run
    assert values(rows, 'HplCheck') == {
        'gflops': 20.434, 'efficiency': pytest.approx(20.434 * 100 / 64)}
    assert values(rows, 'HpcgCheck') == {'gflops': 4.14187}
    mpi_stage = values(rows, 'MpiStageCheck')
    assert mpi_stage['bandwidth'] == 188.663
    bandwidth = next(row for row in rows
                     if row['check_name'] == 'MpiStageCheck'
                     and row['check_perf_var'] == 'bandwidth')
    assert bandwidth['check_perf_unit'] == 'MiB/s'   # bytes / 2^20 / s
    assert mpi_stage['no_copy_time'] == pytest.approx(0.000141425)
    osu = {row['check_params']['benchmark']: row['check_perf_value']
           for row in rows if row['check_name'].startswith('Osu')}
    # allreduce: the -c -T mpi_int recording, at 8 bytes
    assert osu == {'osu_latency': 4.50, 'osu_bw': 5600.52,
                   'osu_bibw': 9371.54, 'osu_allreduce': 0.61}
    allreduce = next(row for row in rows
                     if row['check_name'].startswith('OsuCollective'))
    # every core of both nodes a rank, pinned
    assert allreduce['check_num_tasks'] == 4
    assert allreduce['check_params']['rank_binding'] == '--cpu-bind=cores'
    assert allreduce['reference_key'] == (
        'latency|HB176rs_v4|buffer=cpu,ranks_per_node=2,size=8,'
        'test=osu_allreduce|2n|-')


def test_hpl_and_hpl_dat_rows_are_recorded_with_their_method(cpu_mpi_run):
    _, rows = cpu_mpi_run
    hpl = next(row for row in rows if row['check_name'] == 'HplCheck'
               and row['check_perf_var'] == 'gflops')
    assert hpl['check_perf_peak'] == 64
    assert 'site figure' in hpl['peak_source']
    params = hpl['check_params']
    assert params['n'] == 3000 and params['nb'] == 128
    assert params['rank_binding'] == '--cpu-bind=cores'
    # the sandbox's nodes have no published recipe: flat, and it says so
    assert params['layout_source'].startswith('flat: one rank per core')
    assert params['size_profile'] == 'full'
    hpcc = next(row for row in rows if row['check_name'] == 'HpccTwoNodes')
    assert hpcc['check_params']['size_profile'] == 'smoke'
    assert hpcc['check_params']['no_verdict_reasons'] == ['smoke size']


def stream_rows(slurm_sandbox, tmp_path, *args, extra_env=None):
    result, rows = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4', '-c', 'checks/cpu/stream.py',
        '-n', '^StreamCheck$', *args, extra_env=extra_env)
    return result, {row['check_perf_var']: row for row in rows}


def test_stream_with_another_method_is_informational(slurm_sandbox,
                                                    tmp_path):
    # The sandbox's hbv4 partition declares VM SKU HB176rs_v4, whose STREAM
    # floor comes from Azure's health checks (400M elements, NTIMES 20, 48
    # threads on their place list): the project's own method on a
    # 20M-element binary is not that method, so the row shows the floor
    # without a verdict, says why, and carries the key it looked up.
    result, rows = stream_rows(slurm_sandbox, tmp_path,
                               '-S', 'follow_reference_method=false',
                               '-S', 'array_size=20000000')
    assert result.returncode == 0, result.stdout + result.stderr
    triad = rows['triad_bw']
    assert triad['check_perf_value'] == 12369.6
    assert triad['check_perf_ref'] == 665500
    assert triad['check_perf_result'] == 'informational'
    params = triad['check_params']
    assert params['measured_method']['array_size'] == 20_000_000
    assert params['measured_method']['threads'] == 2
    differences = params['reference_differences']['triad_bw']
    assert differences[:3] == ['array_size 20000000 (reference: 400000000)',
                               'ntimes 10 (reference: 20)',
                               'threads 2 (reference: 48)']
    assert differences[3].startswith('places cores (reference: list48-')
    assert 'no_verdict_reasons' not in params
    assert triad['reference_key'] == (
        'triad_bw|HB176rs_v4|array_size=20000000,ntimes=10,places=cores,'
        'ranks=1,threads=2|1n|-')
    # the distance to the hardware's limit: 4 x 6 DDR5-4800 channels
    assert triad['check_perf_peak'] == 921600
    assert 'DDR5-4800' in triad['peak_source']


SITE_STREAM_METHOD = """
    HB176rs_v4:
      azhc:
        method: {array_size: 20000000, ntimes: 10, threads: 2,
                 places: cores, ranks: 1}
        env: {OMP_PLACES: cores, OMP_PROC_BIND: 'true'}
"""


def test_stream_with_the_reference_method_is_judged(slurm_sandbox, tmp_path):
    # A site declares the method its floor was measured with (the replayed
    # binary's): the same floor now gives a verdict, and a 2-core replay
    # cannot meet HBv4's 665,500 MB/s.
    references = site_references(tmp_path / 'site',
                                 {'stream.yaml': SITE_STREAM_METHOD})
    result, rows = stream_rows(
        slurm_sandbox, tmp_path,
        extra_env={'CLUSTERPROOF_REFERENCES': references})
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert 'performance' in output.lower()
    triad = rows['triad_bw']
    assert triad['check_perf_value'] == 12369.6
    assert triad['check_perf_result'] == 'fail'
    assert triad['check_params']['method_differences'] == []
    assert 'reference_differences' not in triad['check_params']
    assert 'azurehpc-health-checks' in triad['reference_source']
    assert triad['vm_sku'] == 'Standard_HB176rs_v4'


def test_a_generated_input_the_tool_would_not_take_fails(slurm_sandbox,
                                                         tmp_path):
    # NB=100 is not what the recording ran: the stand-in refuses the
    # HPL.dat, prints no HPL output, and the check fails on sanity.
    result, _ = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4', '-c', 'checks/cpu/hpl.py',
        '-n', '^HplCheck$', '-S', 'n=3000', '-S', 'nb=100')
    assert result.returncode != 0
    assert 'sanity error: not hpl output' in result.stdout + result.stderr
    errors = list((tmp_path / 'rfm').rglob('rfm_job.err'))
    assert any('HPL.dat asks NB=[100]' in path.read_text()
               for path in errors)


def test_a_missing_binary_fails_early_with_advice(slurm_sandbox, tmp_path):
    result, _ = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4', '-c', 'checks/cpu/hpl.py',
        '-n', '^HplCheck$', '-S', 'tool_binary=xhpl-not-installed')
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert 'xhpl-not-installed not found on node sb-n' in output
    assert 'spack install hpl' in output


def test_an_osu_validation_fail_fails_the_collective(slurm_sandbox, tmp_path):
    # OMB 7.4's genuine failure shape (tests/support/data/osu/PROVENANCE-built-here
    # .md): a Fail in the Validation column at 16 bytes. The check ran -c,
    # so its sanity reads the column and fails the run.
    failing = tmp_path / 'allreduce_fail.out'
    failing.write_text(read_data(
        'osu', 'v7.4_osu_allreduce_validation_mpi_int_np2.out').replace(
        '16                      0.61              Pass',
        '16                      0.61              Fail'))
    result, _ = run_on_sandbox(
        slurm_sandbox, tmp_path, 'hbv4', '-c', 'checks/network/osu.py',
        '-n', 'OsuCollective%buffer=cpu%benchmark=osu_allreduce',
        extra_env={'CLUSTERPROOF_REPLAY_OSU_ALLREDUCE': str(failing)})
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert 'OSU validation Fail at 16 bytes' in output
