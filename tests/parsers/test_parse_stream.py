"""STREAM parser against the real outputs in tests/support/data/stream."""

import pytest

from checks.parsers import stream
from tests.support import helpers

DATA = helpers.DATA / 'stream'


def read(name: str) -> str:
    return (DATA / name).read_text()


def rates(result) -> tuple:
    return tuple(result.value(name)
                 for name in ('copy_bw', 'scale_bw', 'add_bw', 'triad_bw'))


# file -> (Copy, Scale, Add, Triad) best rates, array size, threads counted
VALID_RUNS = {
    'stream-5.10_oci-e5.192-epyc9654-nps1-96thr.out':
        ((681724.7, 685595.0, 721807.1, 715650.4), 430080000, 96),
    'stream_c_omp1_10M.out':
        ((16306.4, 12000.2, 15348.3, 16361.1), 10000000, 1),
    'stream_c_omp2_10M.out':
        ((15325.5, 10001.9, 14997.1, 12510.4), 10000000, 2),
    'stream_c_omp2_20M.out':
        ((11422.0, 11427.0, 14469.1, 12369.6), 20000000, 2),
}


@pytest.mark.parametrize('name', sorted(VALID_RUNS))
def test_real_runs_give_best_rates(name):
    expected_rates, array_size, threads = VALID_RUNS[name]
    result = stream.parse(read(name))
    assert result.ok, result.reason
    assert rates(result) == expected_rates
    assert all(m.unit == 'MB/s' for m in result.metrics.values())
    assert result.details['array_size'] == array_size
    assert result.details['threads_counted'] == threads
    assert result.details['version'] == '5.10'


def test_kernel_timings_are_kept():
    kernels = stream.parse(read('stream_c_omp1_10M.out')).details['kernels']
    assert kernels['Triad'] == {'best_rate': 16361.1, 'avg_time': 0.033933,
                                'min_time': 0.014669, 'max_time': 0.064232}


def test_array_below_timer_resolution_is_rejected_but_read():
    result = stream.parse(read('stream_c_omp2_10k_tiny_array.out'))
    assert not result.ok
    assert '2 clock ticks' in result.reason
    assert 'at least 20' in result.reason
    assert rates(result) == (83886.1, 83886.1, 125829.1, 111848.1)


def test_wrong_thread_count_names_both_counts():
    result = stream.parse(read('stream_c_omp2_10M.out'), expected_threads=96)
    assert not result.ok
    assert 'counted 2' in result.reason and 'asked for 96' in result.reason
    assert stream.parse(read('stream_c_omp2_10M.out'),
                        expected_threads=2).ok


def test_array_that_does_not_dwarf_the_cache_is_rejected():
    text = read('stream_c_omp2_20M.out')
    result = stream.parse(text, min_array_elements=1150000000)
    assert not result.ok
    assert '20000000 elements' in result.reason
    assert '-DSTREAM_ARRAY_SIZE=1150000000' in result.reason
    assert stream.parse(text, min_array_elements=20000000).ok


@pytest.mark.parametrize('name', sorted(VALID_RUNS))
def test_output_cut_in_the_middle_is_truncated(name):
    text = read(name)
    result = stream.parse(text[:len(text) // 2])
    assert not result.ok
    assert result.reason.startswith('truncated output')
    assert 'Copy, Scale, Add, Triad' in result.reason


def test_output_cut_before_validation_is_truncated():
    text = read('stream_c_omp1_10M.out')
    cut = text[:text.index('Solution Validates')]
    result = stream.parse(cut)
    assert not result.ok
    assert 'Solution Validates' in result.reason
    # the rates were printed, so they are still reported
    assert result.value('triad_bw') == 16361.1


def test_cut_inside_the_triad_row_loses_triad():
    text = read('stream_c_omp1_10M.out')
    cut = text[:text.index('0.064232')]
    result = stream.parse(cut)
    assert not result.ok
    assert result.reason == 'truncated output: no result row for Triad'


def test_failed_validation_is_a_failure():
    # STREAM 5.10 prints this instead of "Solution Validates" (checkSTREAMresults)
    text = read('stream_c_omp1_10M.out').replace(
        'Solution Validates: avg error less than 1.000000e-13 on all three '
        'arrays',
        'Failed Validation on array a[], AvgRelAbsErr > epsilon '
        '(1.000000e-13)')
    result = stream.parse(text)
    assert not result.ok
    assert result.reason.startswith('STREAM validation failed: Failed '
                                    'Validation on array a[]')


def test_empty_output():
    result = stream.parse('')
    assert not result.ok
    assert result.reason == 'empty output: STREAM printed nothing'


def test_foreign_output_is_not_stream():
    hpl = (helpers.DATA / 'hpl'
           / 'hpl2.3_N3000_NB128_P1Q2_np2_PASSED.out').read_text()
    result = stream.parse(hpl)
    assert not result.ok
    assert result.reason.startswith('not stream output')
    assert result.metrics == {}


def test_mpi_abort_is_named():
    text = read('stream_c_omp1_10M.out') + (
        '--------------------------------------------------------------------'
        '------\nmpirun noticed that process rank 0 with PID 0 on node n1 '
        'exited on signal 9 (Killed).\n')
    result = stream.parse(text)
    assert not result.ok
    assert result.reason.startswith('MPI launcher abort: mpirun noticed')


def test_rate_the_timer_could_not_measure_is_named():
    # Fortran STREAM prints "Infinity" when a kernel took no measurable time
    text = read('stream_c_omp2_10k_tiny_array.out').replace(
        'Copy:           83886.1', 'Copy:          Infinity')
    result = stream.parse(text)
    assert not result.ok
    assert result.reason.startswith('no rate for Copy')
    assert 'copy_bw' not in result.metrics
    assert result.value('triad_bw') == 111848.1


def test_hpcc_report_is_not_a_stream_output():
    # HPCC prints its STREAM tables in GB/s: they must not pass as MB/s
    hpcc = (helpers.DATA / 'hpcc'
            / 'hpcc-1.5.0_debian_np2_N2000_NB80_P1Q2.hpccoutf.txt').read_text()
    result = stream.parse(hpcc)
    assert not result.ok
    assert 'HPC Challenge' in result.reason
    assert result.metrics == {}
