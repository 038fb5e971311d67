"""HPL parser against the real outputs in tests/support/data/hpl."""

import pytest

from checks.parsers import hpl
from tests.support import helpers

DATA = helpers.DATA / 'hpl'
ONE_TEST = 'hpl2.3_N3000_NB128_P1Q2_np2_PASSED.out'
FOUR_TESTS = 'hpl2.3_N2000-4000_NB128-192_P1Q2_np2_4tests_PASSED.out'
DEFAULT_DAT = 'hpl2.3_default_testing_HPLdat_864tests_np4.out'
NETLIB_2014 = 'hpl-netlib_wr01c2r4-2014-48proc-excerpt.out'
AMD_BLIS = 'hpl-2.3_wr12r2r4-2020-1rank-amd-blis-excerpt.out'
NVIDIA = 'hpl-nvidia_aws-p5-4node-32gpu-partial.out'


def read(name: str) -> str:
    return (DATA / name).read_text()


# file -> best Gflops, (N, NB, P, Q, time) of that row, number of rows
PASSED_RUNS = {
    ONE_TEST: (20.434, (3000, 128, 1, 2, 0.88), 1),
    FOUR_TESTS: (19.058, (2000, 128, 1, 2, 0.28), 4),
    DEFAULT_DAT: (0.21112, (35, 4, 1, 4, 0.0), 864),
    NETLIB_2014: (979.69, (100000, 192, 6, 8, 680.50), 1),
    AMD_BLIS: (1115.5, (114000, 768, 1, 1, 885.42), 1),
}


@pytest.mark.parametrize('name', sorted(PASSED_RUNS))
def test_passed_runs_give_best_row(name):
    gflops, (n, nb, p, q, time), count = PASSED_RUNS[name]
    result = hpl.parse(read(name))
    assert result.ok, result.reason
    assert result.value('gflops') == gflops
    assert result.metrics['gflops'].unit == 'Gflops'
    details = result.details
    assert (details['best_n'], details['best_nb'], details['best_p'],
            details['best_q'], details['best_time']) == (n, nb, p, q, time)
    assert len(details['rows']) == count
    assert all(row['verdict'] == 'PASSED' for row in details['rows'])


def test_every_row_is_kept_with_its_residual():
    rows = hpl.parse(read(FOUR_TESTS)).details['rows']
    assert [(r['n'], r['nb'], r['gflops'], r['residual']) for r in rows] == [
        (2000, 128, 19.058, 3.40262780e-03),
        (2000, 192, 9.1607, 4.05096092e-03),
        (4000, 128, 12.127, 2.69123691e-03),
        (4000, 192, 15.537, 3.56387348e-03),
    ]
    assert rows[0] == {'tv': 'WR11C2R4', 'n': 2000, 'nb': 128, 'p': 1,
                       'q': 2, 'time': 0.28, 'gflops': 19.058,
                       'residual': 3.40262780e-03, 'verdict': 'PASSED'}


def test_default_hpl_dat_rows_cover_all_grids_and_variants():
    result = hpl.parse(read(DEFAULT_DAT))
    rows = result.details['rows']
    assert {(r['p'], r['q']) for r in rows} == {(2, 2), (1, 4), (4, 1)}
    assert {r['n'] for r in rows} == {29, 30, 34, 35}
    assert rows[0]['tv'] == 'WR00L2L2' and rows[0]['gflops'] == 0.022791
    assert rows[-1]['tv'] == 'WR00R2R4' and rows[-1]['residual'] == 1.99396688e-02
    assert result.details['summary'] == {'finished': 864, 'passed': 864,
                                         'failed': 0, 'skipped': 0}
    assert result.details['threshold'] == 16.0


def test_netlib_residual_in_fixed_notation():
    row = hpl.parse(read(NETLIB_2014)).details['rows'][0]
    assert (row['tv'], row['residual'], row['verdict']) == (
        'WR01C2R4', 0.0021839, 'PASSED')


def test_nvidia_partial_keeps_rate_but_has_no_residual():
    result = hpl.parse(read(NVIDIA))
    assert not result.ok
    assert result.reason == ('no residual check after WC03R2R2 N=528384 '
                             'NB=1024 P=8 Q=4 (output truncated?)')
    assert result.value('gflops') == 1.341e+06
    row = result.details['rows'][0]
    assert row['gflops_per_gpu'] == 4.192e+04
    assert row['time'] == 73.32


def test_failed_residual_fails_the_run():
    # The residual line of the 4-test run, as HPL prints it when the scaled
    # residual exceeds the threshold (plus HPL's own summary counts).
    text = read(FOUR_TESTS).replace(
        '2.69123691e-03 ...... PASSED', '2.69123691e-03 ...... FAILED'
    ).replace('4 tests completed and passed', '3 tests completed and passed'
    ).replace('0 tests completed and failed', '1 tests completed and failed')
    result = hpl.parse(text)
    assert not result.ok
    assert result.reason == ('residual check FAILED for 1 of 4 tests (first: '
                             'WR11C2R4 N=4000 NB=128 P=1 Q=2, residual '
                             '0.00269123691)')
    # the rates are still there for whoever looks
    assert result.value('gflops') == 19.058
    assert [r['verdict'] for r in result.details['rows']] == [
        'PASSED', 'PASSED', 'FAILED', 'PASSED']


def test_summary_failure_count_alone_fails_the_run():
    text = read(ONE_TEST).replace('0 tests completed and failed',
                                  '1 tests completed and failed')
    result = hpl.parse(text)
    assert not result.ok
    assert 'HPL reports 1 tests that failed' in result.reason


def test_skipped_tests_mean_a_bad_grid():
    text = read(ONE_TEST).replace('0 tests skipped because',
                                  '2 tests skipped because')
    result = hpl.parse(text)
    assert not result.ok
    assert result.reason.startswith('HPL skipped 2 tests')


@pytest.mark.parametrize('name', [ONE_TEST, FOUR_TESTS, DEFAULT_DAT])
def test_run_cut_in_the_middle_is_truncated(name):
    text = read(name)
    result = hpl.parse(text[:len(text) // 2])
    assert not result.ok
    assert 'truncated' in result.reason


def test_cut_between_tests_misses_the_summary():
    text = read(FOUR_TESTS)
    cut = text[:text.index('WR11C2R4        4000   128')]
    result = hpl.parse(cut)
    assert not result.ok
    assert result.reason == ('truncated output: no "Finished ... tests" '
                             'summary after the last result')
    assert len(result.details['rows']) == 2


def test_cut_after_result_row_misses_the_residual():
    text = read(AMD_BLIS)
    result = hpl.parse(text[:text.index('HPL_pdgesv() end time')])
    assert not result.ok
    assert result.reason.startswith('no residual check after WR12R2R4 '
                                    'N=114000')


def test_cut_before_first_row():
    text = read(ONE_TEST)
    result = hpl.parse(text[:text.index('T/V                N')])
    assert not result.ok
    assert result.reason == ('truncated output: HPL started but printed no '
                             'result row')
    assert result.metrics == {}


def test_grid_must_use_every_task():
    assert hpl.parse(read(ONE_TEST), expected_tasks=2).ok
    result = hpl.parse(read(ONE_TEST), expected_tasks=4)
    assert not result.ok
    assert result.reason == ('wrong task count: WR11C2R4 N=3000 NB=128 P=1 '
                             'Q=2 uses 2 processes, the job started 4 MPI '
                             'tasks')


def test_hpl_error_is_reported():
    # what HPL_pdinfo prints for an HPL.dat it cannot use
    text = read(ONE_TEST)
    text = text[:text.index('The following parameter values')] + (
        'HPL ERROR from process # 0, on line 419 of function HPL_pdinfo:\n'
        '>>> Need at least 4 processes for these tests <<<\n')
    result = hpl.parse(text)
    assert not result.ok
    assert result.reason.startswith('HPL error: HPL ERROR from process # 0')


def test_empty_output():
    result = hpl.parse('')
    assert not result.ok
    assert result.reason == 'empty output: HPL printed nothing'


def test_foreign_output_is_not_hpl():
    text = (helpers.DATA / 'stream'
            / 'stream_c_omp1_10M.out').read_text()
    result = hpl.parse(text)
    assert not result.ok
    assert result.reason.startswith('not hpl output')


def test_mpi_abort_is_named():
    text = read(ONE_TEST)
    text = text[:text.index('HPL_pdgesv() end time')] + (
        'Primary job  terminated normally, but 1 process returned\n'
        'a non-zero exit code. Per user-direction, the job has been aborted.\n')
    result = hpl.parse(text)
    assert not result.ok
    assert result.reason.startswith('MPI launcher abort: Primary job')


def test_hpcc_report_is_not_an_hpl_output():
    hpcc = (helpers.DATA / 'hpcc'
            / 'hpcc-1.5.0_debian_np2_N2000_NB80_P1Q2.hpccoutf.txt').read_text()
    result = hpl.parse(hpcc)
    assert not result.ok
    assert 'HPC Challenge' in result.reason
