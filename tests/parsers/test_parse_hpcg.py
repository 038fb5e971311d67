"""HPCG parser against the real reports in tests/support/data/hpcg."""

import pytest

from checks.parsers import hpcg
from tests.support import helpers

DATA = helpers.DATA / 'hpcg'
V31_RT10 = 'v3.1_np2_omp1_16x16x16_rt10.HPCG-Benchmark_3.1_2026-11-30_14-07-34.txt'
V31_RT60 = 'v3.1_np2_omp1_16x16x16_rt60.HPCG-Benchmark_3.1_2026-11-30_14-15-12.txt'
V30_QUICK = ('v3.0_np2_nomp_hpcgdat_rt10_QUICKPATH.'
             'HPCG-Benchmark-3.0_2026.11.30.14.08.17.yaml')
MKL_30 = 'hpcg-3.0-yaml_intel-mkl-skx-8proc-2019.out'
GREP_31 = 'hpcg-3.1-txt_grep-final-summary-per-node-2020.out'
LOGS = ['v3.1_np2_omp1_16x16x16_rt10.hpcg20261130T140720.txt',
        'v3.1_np2_omp1_16x16x16_rt60.hpcg20261130T141417.txt',
        'v3.0_np2_nomp_hpcgdat_rt10_QUICKPATH.hpcg_log_2026.11.30.14.08.16.txt']
EMPTY_STDOUTS = ['v3.1_np2_omp1_16x16x16_rt10.stdout.out',
                 'v3.1_np2_omp1_16x16x16_rt60.stdout.out',
                 'v3.0_np2_nomp_hpcgdat_rt10_QUICKPATH.stdout.out']


def read(name: str) -> str:
    return (DATA / name).read_text()


# report -> VALID rating, the 2.4 rating it must NOT be, version, ranks,
# local grid, execution time (s)
REPORTS = {
    V31_RT10: (4.14187, 4.25654, '3.1', 2, (16, 16, 16), 14.189),
    V31_RT60: (4.92423, 5.10816, '3.1', 2, (16, 16, 16), 55.3904),
    V30_QUICK: (1.16486, 1.17881, '3.0', 2, (16, 16, 16), 0.116179),
    MKL_30: (3.28908, 3.30425, '3.0', 8, (104, 104, 104), 50.3291),
}


@pytest.mark.parametrize('name', sorted(REPORTS))
def test_valid_reports_give_the_official_rating(name):
    rating, historical, version, ranks, grid, seconds = REPORTS[name]
    result = hpcg.parse(read(name))
    assert result.ok, result.reason
    assert result.value('gflops') == rating
    assert result.metrics['gflops'].unit == 'GFLOP/s'
    details = result.details
    assert details['rating_2_4'] == historical != rating
    assert details['version'] == version
    assert details['distributed_processes'] == ranks
    assert (details['local_nx'], details['local_ny'],
            details['local_nz']) == grid
    assert details['execution_time'] == seconds


def test_global_grid_and_bandwidth_of_a_31_report():
    details = hpcg.parse(read(V31_RT10)).details
    assert (details['global_nx'], details['global_ny'],
            details['global_nz']) == (32, 16, 16)
    assert details['raw_total_bw'] == 32.3812
    assert details['official_min_time'] == 1800
    assert details['threads_per_process'] == 1
    assert 'quickpath' not in details


def test_quickpath_is_recorded():
    assert hpcg.parse(read(V30_QUICK)).details['quickpath'] is True
    assert hpcg.parse(read(MKL_30)).details['quickpath'] is True


def test_grep_of_several_reports_keeps_the_weakest_node():
    result = hpcg.parse(read(GREP_31))
    assert result.ok, result.reason
    assert result.value('gflops') == 22.2268
    ratings = result.details['ratings']
    assert len(ratings) == 8
    assert ratings[0] == {
        'source': 'hpc-node-01-rdma.local.rdma_HPCG-Benchmark_3.1_'
                  '2020-12-16_11-04-39.txt',
        'gflops': 23.1071}
    assert [r['gflops'] for r in ratings] == [
        23.1071, 22.6171, 22.9484, 22.8363, 23.1319, 23.0086, 22.2268,
        23.1532]


def test_invalid_31_report_fails_and_says_why():
    # HPCG 3.1 prints these Final Summary lines instead of the rating when
    # a validation test fails (ReportResults.cpp)
    text = read(V31_RT10).replace(
        'Spectral Convergence Tests::Result=PASSED',
        'Spectral Convergence Tests::Result=FAILED').replace(
        'Final Summary::HPCG result is VALID with a GFLOP/s rating of=4.14187\n'
        'Final Summary::HPCG 2.4 rating for historical reasons is=4.25654\n',
        'Final Summary::HPCG result is=INVALID.\n')
    result = hpcg.parse(text)
    assert not result.ok
    assert result.reason == ('HPCG result is INVALID: FAILED Spectral '
                             'Convergence Tests')
    assert 'gflops' not in result.metrics


def test_invalid_30_report_fails():
    text = read(V30_QUICK).replace(
        'Reproducibility Information: \n  Result: PASSED',
        'Reproducibility Information: \n  Result: FAILED').replace(
        '  HPCG result is VALID with a GFLOP/s rating of: 1.16486\n',
        '  HPCG result is: INVALID.\n')
    result = hpcg.parse(text)
    assert not result.ok
    assert result.reason == ('HPCG result is INVALID: FAILED '
                             'Reproducibility Information')


def test_invalid_line_alone_is_enough():
    text = read(V31_RT60).replace(
        'HPCG result is VALID with a GFLOP/s rating of=4.92423',
        'HPCG result is=INVALID.')
    result = hpcg.parse(text)
    assert not result.ok
    assert result.reason == 'HPCG result is INVALID'


def test_wrong_process_count():
    assert hpcg.parse(read(V31_RT10), expected_processes=2).ok
    result = hpcg.parse(read(V31_RT10), expected_processes=176)
    assert not result.ok
    assert result.reason == ('wrong task count: HPCG ran on 2 MPI processes, '
                             'the job started 176')


@pytest.mark.parametrize('name', sorted(REPORTS))
def test_report_cut_in_the_middle_is_truncated(name):
    text = read(name)
    result = hpcg.parse(text[:len(text) // 2])
    assert not result.ok
    assert result.reason.startswith('truncated report: no "HPCG result is '
                                    'VALID')


@pytest.mark.parametrize('name', EMPTY_STDOUTS)
def test_empty_stdout_points_to_the_report(name):
    result = hpcg.parse(read(name))
    assert not result.ok
    assert result.reason.startswith('empty output: HPCG writes its results '
                                    'to its report file')


@pytest.mark.parametrize('name', LOGS)
def test_log_file_is_not_the_report(name):
    result = hpcg.parse(read(name))
    assert not result.ok
    assert result.reason.startswith("this is HPCG's log file")


def test_foreign_output_is_not_hpcg():
    text = (helpers.DATA / 'hpl'
            / 'hpl2.3_N3000_NB128_P1Q2_np2_PASSED.out').read_text()
    result = hpcg.parse(text)
    assert not result.ok
    assert result.reason.startswith('not hpcg output')
