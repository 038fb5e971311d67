"""The replay stand-ins check their input as the real tools would: a
malformed or mismatched HPL.dat, hpcg.dat, STREAM environment or command
line makes them fail, so a check that generates a broken input fails its
test instead of being handed a recorded success."""
import os
import subprocess

import pytest

from checks.cpu import hpcg, hpl_input
from tests.support.helpers import STANDINS


def run_standin(tool, cwd, *args, **env):
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(('SLURM_', 'OMPI_', 'PMIX_', 'OMP_',
                                  'CLUSTERPROOF_REPLAY'))}
    return subprocess.run([str(STANDINS / tool), *args], cwd=cwd,
                          env={**clean, **env}, capture_output=True,
                          text=True, timeout=60)


def test_xhpl_replays_for_the_recorded_hpl_dat(tmp_path):
    (tmp_path / 'HPL.dat').write_text(hpl_input.hpl_dat(3000, 128, 1, 2))
    done = run_standin('xhpl', tmp_path, OMPI_COMM_WORLD_SIZE='2')
    assert done.returncode == 0, done.stderr
    assert 'PASSED' in done.stdout


@pytest.mark.parametrize('change, reason', [
    (lambda lines: lines.__setitem__(5, 'Ns'), 'Ns: not integers'),
    (lambda lines: lines.__setitem__(5, ''), 'Ns: 1 values expected'),
    (lambda lines: lines.__setitem__(7, 'abc NBs'), 'NBs: not integers'),
    (lambda lines: lines.__delitem__(slice(20, None)), 'HPL reads 31'),
    (lambda lines: lines.__setitem__(11, '4 Qs'), 'needs 4 processes'),
    (lambda lines: lines.__setitem__(5, '5000 Ns'), 'HPL.dat asks N=[5000]'),
])
def test_xhpl_refuses_a_bad_hpl_dat(tmp_path, change, reason):
    lines = hpl_input.hpl_dat(3000, 128, 1, 2).splitlines()
    change(lines)
    (tmp_path / 'HPL.dat').write_text('\n'.join(lines) + '\n')
    done = run_standin('xhpl', tmp_path, OMPI_COMM_WORLD_SIZE='2')
    assert done.returncode == 1
    assert reason in done.stderr
    assert done.stdout == ''


def test_xhpl_without_hpl_dat_fails(tmp_path):
    done = run_standin('xhpl', tmp_path)
    assert done.returncode == 1 and 'HPL.dat not found' in done.stderr


def test_xhpcg_checks_hpcg_dat_against_its_command_line(tmp_path):
    (tmp_path / 'hpcg.dat').write_text(hpcg.hpcg_dat(16, 16, 16, 10))
    args = ['--nx=16', '--ny=16', '--nz=16', '--rt=10']
    ok = run_standin('xhpcg', tmp_path, *args, OMPI_COMM_WORLD_SIZE='2')
    assert ok.returncode == 0, ok.stderr
    assert list(tmp_path.glob('HPCG-Benchmark_3.1_*.txt'))
    bad = run_standin('xhpcg', tmp_path, '--nx=32', '--ny=16', '--nz=16',
                      '--rt=10', OMPI_COMM_WORLD_SIZE='2')
    assert bad.returncode == 1 and 'disagrees with hpcg.dat' in bad.stderr
    (tmp_path / 'hpcg.dat').write_text('HPCG\nx\n16 16\n')
    broken = run_standin('xhpcg', tmp_path, OMPI_COMM_WORLD_SIZE='2')
    assert broken.returncode == 1 and 'hpcg.dat' in broken.stderr


def test_stream_needs_placed_threads(tmp_path):
    ok = run_standin('stream_c.exe', tmp_path, OMP_NUM_THREADS='2',
                     OMP_PLACES='cores')
    assert ok.returncode == 0 and 'Triad:' in ok.stdout
    floating = run_standin('stream_c.exe', tmp_path, OMP_NUM_THREADS='2')
    assert floating.returncode == 1 and 'OMP_PLACES' in floating.stderr
    other = run_standin('stream_c.exe', tmp_path, OMP_NUM_THREADS='48',
                        OMP_PLACES='cores')
    assert other.returncode == 1 and 'ran 2 threads' in other.stderr


def test_osu_and_mpi_stage_refuse_unknown_options(tmp_path):
    assert run_standin('osu_latency', tmp_path, '-m', '8').returncode == 0
    bad = run_standin('osu_latency', tmp_path, '--bogus')
    assert bad.returncode == 1 and "unknown OSU option '--bogus'" in bad.stderr
    source = tmp_path / 'source.bin'
    source.write_bytes(b'x')
    ok = run_standin('mpi_stage', tmp_path, '--source', str(source),
                     '--dest', str(tmp_path / 'd' / 'x'), '--verbose',
                     '--overwrite')
    assert ok.returncode == 0, ok.stderr
    quiet = run_standin('mpi_stage', tmp_path, '--source', str(source),
                        '--dest', str(tmp_path / 'x'))
    assert quiet.returncode == 1 and '--verbose is missing' in quiet.stderr
    missing = run_standin('mpi_stage', tmp_path, '--source',
                          str(tmp_path / 'nope'), '--dest', 'x', '--verbose')
    assert missing.returncode == 1 and 'does not exist' in missing.stderr


@pytest.mark.parametrize('args, reason', [
    (['-b', '2M', '-t', '3M'], 'must divide'),
    (['-b', '2MB'], 'is not a size'),
    (['-s', 'x'], 'is not a count'),
    (['--bogus'], 'unknown option'),
    (['-o', '/nonexistent/dir/test.bin'], 'does not exist'),
    (['-o', '/tmp/$JOB/test.bin'], 'unexpanded shell variable'),
])
def test_ior_refuses_a_bad_command_line(tmp_path, args, reason):
    done = run_standin('ior', tmp_path, *args)
    assert done.returncode == 1
    assert reason in done.stderr


def test_ior_replays_for_a_good_command_line(tmp_path):
    done = run_standin('ior', tmp_path, '-a', 'POSIX', '-w', '-r', '-C', '-e',
                       '-g', '-b', '2M', '-t', '2M', '-s', '384', '-F',
                       '-D', '300', '-O', 'stoneWallingWearOut=1',
                       '-o', str(tmp_path / 'test.bin'))
    assert done.returncode == 0, done.stderr
    assert 'Summary of all tests' in done.stdout


def test_nvbandwidth_replays_only_the_testcases_asked_for(tmp_path):
    ok = run_standin('nvbandwidth', tmp_path, '-t',
                     'device_to_host_memcpy_ce', '-i', '10')
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count('Running ') == 1
    assert 'SUM device_to_host_memcpy_ce 441.05' in ok.stdout
    # v0.2 has no JSON: its usage does not list --json
    usage = run_standin('nvbandwidth', tmp_path, '--help')
    assert usage.returncode == 0 and '--json' not in usage.stdout


@pytest.mark.parametrize('args,reason', [
    (['-t', 'host_to_device_memcpy_ce', '-j'], "unrecognised option '-j'"),
    (['-t', 'no_such_testcase', '-i', '10'],
     'the recording has no testcase no_such_testcase'),
    (['-i', '10'], 'no testcase given with -t'),
    (['-t', 'host_to_device_memcpy_ce', '-i', '0'],
     "-i needs a whole number of at least 1, not '0'")])
def test_nvbandwidth_refuses_a_bad_command_line(tmp_path, args, reason):
    done = run_standin('nvbandwidth', tmp_path, *args)
    assert done.returncode == 2
    assert reason in done.stderr


def test_nvbandwidth_slows_one_gpu_of_one_node(tmp_path):
    args = ['-t', 'host_to_device_memcpy_ce', '-i', '10']
    slow = run_standin('nvbandwidth', tmp_path, *args,
                       SLURMD_NODENAME='sb-n4',
                       CLUSTERPROOF_STANDIN_SLOW_GPU_SB_N4='3')
    # line 25 of the recording: GPU 3 55.30 -> 27.65, the SUM of the
    # row's cells again
    assert '0     55.28     55.30     55.32     27.65' in slow.stdout
    assert 'SUM host_to_device_memcpy_ce 414.86' in slow.stdout
    other = run_standin('nvbandwidth', tmp_path, *args,
                        SLURMD_NODENAME='sb-n1',
                        CLUSTERPROOF_STANDIN_SLOW_GPU_SB_N4='3')
    assert 'SUM host_to_device_memcpy_ce 442.52' in other.stdout


def test_cuda_stream_replays_for_a_gpu_the_job_has(tmp_path):
    ok = run_standin('cuda-stream', tmp_path, '--numtimes', '100',
                     '--device', '7')
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith('BabelStream\nVersion: 5.0\n')
    for args, reason in [(['--device', '8'], '--device 8: no such GPU'),
                         (['--numtimes', '1'], '--numtimes needs a whole '
                          'number of at least 2'),
                         (['-s', '100'], "unrecognised option '-s'")]:
        done = run_standin('cuda-stream', tmp_path, *args)
        assert done.returncode == 2 and reason in done.stderr, args
