"""HPC Challenge parser against a real hpccoutf.txt (tests/support/data/hpcc)."""

import pytest

from checks import parsers
from checks.parsers import hpcc
from tests.support import helpers

DATA = helpers.DATA
SAMPLE = 'hpcc-1.5.0_debian_np2_N2000_NB80_P1Q2.hpccoutf.txt'


def read(name, tool='hpcc'):
    return (DATA / tool / name).read_text()


@pytest.fixture
def text():
    return read(SAMPLE)


# Summary keys of the sample, read by eye, with their units
PINNED = {
    'HPL_Tflops': (0.018829, 'Tflop/s'),
    'StarSTREAM_Triad': (20.9575, 'GB/s'),
    'SingleSTREAM_Triad': (22.0812, 'GB/s'),
    'PTRANS_GBs': (2.37781, 'GB/s'),
    'MPIRandomAccess_GUPs': (0.0336198, 'GUP/s'),
    'AvgPingPongLatency_usec': (0.407097, 'us'),
    'AvgPingPongBandwidth_GBytes': (8.93101, 'GB/s'),
    'StarSTREAM_Copy': (20.5214, 'GB/s'),
    'SingleSTREAM_Scale': (21.445, 'GB/s'),
    'MPIFFT_Gflops': (4.87303, 'Gflop/s'),
    'StarFFT_Gflops': (3.79519, 'Gflop/s'),
    'SingleFFT_Gflops': (4.2619, 'Gflop/s'),
    'StarDGEMM_Gflops': (13.2315, 'Gflop/s'),
    'StarRandomAccess_GUPs': (0.295585, 'GUP/s'),
    'MaxPingPongLatency_usec': (0.4075, 'us'),
    'NaturallyOrderedRingBandwidth_GBytes': (8.29173, 'GB/s'),
}


@pytest.mark.parametrize('name', sorted(PINNED))
def test_summary_values(text, name):
    result = hpcc.parse(text)
    assert result.ok, result.reason
    value, unit = PINNED[name]
    assert result.value(name) == pytest.approx(value)
    assert result.metrics[name].unit == unit


def test_contract_metrics_present(text):
    metrics = hpcc.parse(text).metrics
    assert set(hpcc.REQUIRED) <= set(metrics)


def test_run_parameters(text):
    details = hpcc.parse(text).details
    assert details['HPL_N'] == 2000
    assert details['HPL_NB'] == 80
    assert (details['HPL_nprow'], details['HPL_npcol']) == (1, 2)
    assert details['CommWorldProcs'] == 2
    assert details['STREAM_VectorSize'] == 666666
    assert details['version'] == '1.5.0'
    assert details['runs_in_file'] == 1


def test_success_zero_fails(text):
    result = hpcc.parse(text.replace('Success=1', 'Success=0'))
    assert not result.ok
    assert result.reason == 'hpcc reports Success=0'


def test_failed_hpl_residual_fails(text):
    line = '0.0034465 ...... PASSED'
    assert line in text
    result = hpcc.parse(text.replace(line, '123.45678 ...... FAILED'))
    assert not result.ok
    assert 'FAILED' in result.reason and '123.45678' in result.reason


def test_failed_ptrans_row_fails(text):
    row = 'WALL  1000  1000  80  80   1   2     0.00 PASSED    2.378  0.00'
    assert row in text
    failed = row.replace('PASSED', 'FAILED')
    result = hpcc.parse(text.replace(row, failed, 1))
    assert not result.ok
    assert result.reason == f'hpcc check failed: {failed}'


def test_failed_residual_count_fails(text):
    line = '    0 tests completed and failed residual checks.'
    assert line in text
    result = hpcc.parse(text.replace(line, line.replace('0', '2', 1)))
    assert not result.ok
    assert '2 tests completed and failed residual checks' in result.reason


def test_appended_runs_use_the_last(text):
    # hpcc appends to hpccoutf.txt: an older failed run before a good one
    # does not fail the file, and the last summary wins.
    older = text.replace('Success=1', 'Success=0').replace(
        'HPL_Tflops=0.018829', 'HPL_Tflops=0.5')
    result = hpcc.parse(older + text)
    assert result.ok, result.reason
    assert result.value('HPL_Tflops') == pytest.approx(0.018829)
    assert result.details['runs_in_file'] == 2
    assert not hpcc.parse(text + older).ok


def test_negative_value_is_not_measured(text):
    result = hpcc.parse(text.replace('AvgPingPongLatency_usec=0.407097',
                                     'AvgPingPongLatency_usec=-1'))
    assert result.ok
    assert 'AvgPingPongLatency_usec' not in result.metrics
    assert result.details['not_measured'] == ['AvgPingPongLatency_usec']


def test_missing_summary_key_fails(text):
    result = hpcc.parse(text.replace('PTRANS_GBs=2.37781\n', ''))
    assert not result.ok
    assert result.reason == 'Summary section lacks PTRANS_GBs'


def test_truncated_in_the_middle(text):
    result = hpcc.parse(text[:len(text) // 2])
    assert not result.ok
    assert 'no Summary section' in result.reason and 'truncated' in \
        result.reason


def test_truncated_inside_the_summary(text):
    cut = text[:text.index('StarSTREAM_Triad=')]
    result = hpcc.parse(cut)
    assert not result.ok
    assert result.reason == ('Summary section cut before its end '
                             '(truncated hpccoutf.txt)')


def test_empty_output():
    for text in ('', '  \n', None):
        result = hpcc.parse(text)
        assert not result.ok
        assert 'empty output' in result.reason


@pytest.mark.parametrize('tool,name', [
    ('osu', 'v7.4_osu_bw_np2.out'),
    ('mpi-stage', 'np1_first_copy.err'),
])
def test_foreign_outputs(tool, name):
    result = hpcc.parse(read(name, tool))
    assert not result.ok
    assert 'not hpcc output' in result.reason


def test_launcher_abort_alone():
    result = hpcc.parse(read('np2_same_host_refused.err', 'mpi-stage'))
    assert not result.ok
    assert result.reason.startswith('MPI abort: MPI_ABORT was invoked')


def test_mpi_abort_without_summary(text):
    abort = read('np1_fail_missing_args.err', 'mpi-stage')
    head = text[:text.index('Begin of PTRANS section.')]
    result = hpcc.parse(head + abort)
    assert not result.ok
    assert result.reason.startswith('MPI abort: MPI_ABORT was invoked')


def test_registry(text):
    assert parsers.parse('hpcc', text).ok


def test_expected_rank_count(text):
    assert hpcc.parse(text, ranks=2).ok
    result = hpcc.parse(text, ranks=4)
    assert not result.ok
    assert result.reason.startswith('hpcc ran on 2 MPI processes, expected 4')
    assert parsers.parse('hpcc', text, ranks=4).reason == result.reason


def test_one_process_run_has_no_ping_pong():
    result = hpcc.parse(read('hpcc-1.5.0_debian_np1_N1000_NB80_P1Q1'
                             '.hpccoutf.txt'), ranks=1)
    assert result.ok, result.reason
    assert 'AvgPingPongLatency_usec' not in result.metrics
    assert 'AvgPingPongBandwidth_GBytes' in result.details['not_measured']
    assert len(result.details['not_measured']) == 10
    assert result.details['HPL_N'] == 1000
    assert result.details['CommWorldProcs'] == 1
    assert result.value('HPL_Tflops') == pytest.approx(0.00516092)
    assert result.value('StarSTREAM_Triad') == pytest.approx(71.0877)
    assert result.value('PTRANS_GBs') == pytest.approx(5.66404)
    assert result.value('MPIRandomAccess_GUPs') == pytest.approx(0.0513415)
