"""OSU micro-benchmarks parser against real outputs (tests/support/data/osu)."""

import pytest

from checks import parsers
from checks.parsers import osu
from tests.support import helpers

DATA = helpers.DATA / 'osu'


def read(name):
    return (DATA / name).read_text()


# file -> (metric, value read by eye, message size it belongs to)
CORPUS = {
    # OMB 5.3 / 5.7 / 5.9, 2 ranks on one host
    'v5.3_osu_latency_np2.out': ('latency', 1.20, 8),
    'v5.3_osu_bw_np2.out': ('bandwidth', 4435.75, 4194304),
    'v5.3_osu_bibw_np2.out': ('bandwidth', 4423.72, 4194304),
    'v5.3_osu_allreduce_full_stats_np2.out': ('latency', 0.75, 8),
    'v5.3_osu_alltoall_np2.out': ('latency', 0.67, 8),
    'v5.7_osu_latency_np2.out': ('latency', 0.93, 8),
    'v5.7_osu_bw_np2.out': ('bandwidth', 3348.06, 4194304),
    'v5.7_osu_bibw_np2.out': ('bandwidth', 6203.26, 4194304),
    'v5.7_osu_allreduce_np2.out': ('latency', 5.77, 8),
    'v5.7_osu_alltoall_np2.out': ('latency', 0.62, 8),
    'v5.9_osu_latency_np2.out': ('latency', 1.19, 8),
    'v5.9_osu_bw_np2.out': ('bandwidth', 3709.29, 4194304),
    'v5.9_osu_bibw_np2.out': ('bandwidth', 6341.92, 4194304),
    'v5.9_osu_allreduce_np2.out': ('latency', 0.71, 8),
    'v5.9_osu_alltoall_np2.out': ('latency', 0.66, 8),
    # OMB 7.2 / 7.4: '# Datatype' line, 7.4's 'Avg Latency(us)' header
    'v7.2_osu_allreduce_np2.out': ('latency', 0.58, 8),
    'v7.2_osu_allreduce_validation_np2.out': ('latency', 0.59, 8),
    'v7.2_osu_alltoall_np2.out': ('latency', 0.67, 8),
    'v7.2_osu_bibw_np2.out': ('bandwidth', 20946.50, 4194304),
    'v7.2_osu_latency_validation_m1-64_np2.out': ('latency', 0.43, 8),
    'v7.4_osu_latency_np2.out': ('latency', 4.50, 8),
    'v7.4_osu_latency_m0-1024_validation_np2.out': ('latency', 1.74, 8),
    'v7.4_osu_bw_np2.out': ('bandwidth', 5600.52, 4194304),
    'v7.4_osu_bibw_np2.out': ('bandwidth', 9371.54, 4194304),
    'v7.4_osu_allreduce_np2.out': ('latency', 0.69, 8),
    'v7.4_osu_allreduce_full_stats_np2.out': ('latency', 0.69, 8),
    'v7.4_osu_allreduce_validation_mpi_int_np2.out': ('latency', 0.61, 8),
    'v7.4_osu_alltoall_np2.out': ('latency', 0.58, 8),
    # Public outputs: real fabrics, GPUs, single-size runs
    'osu_allreduce_v7.5_oci-x9-4node-144proc.out': ('latency', 15.34, 8),
    'osu_alltoall_v7.5_oci-x9-1node-36proc.out': ('latency', 36.18, 8),
    'osu_bibw_v5.9_HH_kaust-ibex-a100-2node.out':
        ('bandwidth', 51215.00, 4194304),
    'osu_latency_v7.5_oci-x9-2node-single-size.out': ('latency', 1.67, 1),
    'osu_bw_v7.5_oci-x9-2node-256MiB.out': ('bandwidth', 12254.16, 268435456),
    'osu_latency_v7.5_cuda-DD_a100-oci-intranode.out': ('latency', 2.50, 1),
    'osu_bw_v7.5_cuda-DD_a100-oci-intranode-256MiB.out':
        ('bandwidth', 279568.26, 268435456),
    'osu_bw_v7.5_cuda-DD_a100-oci-2node-256MiB.out':
        ('bandwidth', 11962.21, 268435456),
    'osu_xccl_allreduce_v7.5_cuda-DD_a100-oci-2node-16gpu.out':
        ('latency', 13482.19, 1073741824),
}


@pytest.mark.parametrize('name', sorted(CORPUS))
def test_corpus_value(name):
    metric, value, size = CORPUS[name]
    result = osu.parse(read(name))
    assert result.ok, result.reason
    assert list(result.metrics) == [metric]
    assert result.value(metric) == pytest.approx(value)
    assert result.metrics[metric].unit == osu.UNITS[metric]
    assert result.details['size'] == size


def test_every_result_file_is_pinned():
    results = {p.name for p in DATA.glob('*.out')
               if p.stat().st_size and 'version_flag' not in p.name
               and 'bad_option' not in p.name}
    assert results == set(CORPUS)


def test_whole_curve_is_kept():
    result = osu.parse(read('v7.4_osu_bw_np2.out'))
    curve = result.details['curve']
    assert [p['size'] for p in curve] == [2 ** i for i in range(23)]
    assert curve[0] == {'size': 1, 'bandwidth': 9.52}
    assert curve[6] == {'size': 64, 'bandwidth': 4.36}
    assert result.details['version'] == '7.4'
    assert result.details['datatype'] == 'MPI_CHAR'
    assert result.details['device'] == 'host'


def test_latency_curve_starts_at_zero_bytes_in_5x():
    curve = osu.parse(read('v5.3_osu_latency_np2.out')).details['curve']
    assert curve[0] == {'size': 0, 'latency': 0.31}
    assert curve[-1] == {'size': 4194304, 'latency': 2329.78}


def test_full_stats_columns():
    result = osu.parse(read('v5.3_osu_allreduce_full_stats_np2.out'))
    assert result.details['columns'] == [
        'size', 'latency', 'min_latency', 'max_latency', 'iterations']
    assert result.details['curve'][1] == {
        'size': 8, 'latency': 0.75, 'min_latency': 0.67,
        'max_latency': 0.83, 'iterations': 1000}
    last = osu.parse(read('v7.4_osu_allreduce_full_stats_np2.out'))
    assert last.details['curve'][-1] == {
        'size': 1048576, 'latency': 1518.21, 'min_latency': 1428.16,
        'max_latency': 1608.27, 'iterations': 100}


def test_validation_column_all_pass():
    result = osu.parse(read('v7.2_osu_latency_validation_m1-64_np2.out'))
    assert result.ok
    assert {p['validation'] for p in result.details['curve']} == {'Pass'}
    assert result.details['curve'][0] == {
        'size': 1, 'latency': 0.47, 'validation': 'Pass'}


def test_validation_fail_fails_the_run():
    # Shaped like OMB 7.4's genuine failure (PROVENANCE-built-here.md): a
    # 'Fail' in the Validation column at 16 bytes, then the error line.
    text = read('v7.4_osu_allreduce_validation_mpi_int_np2.out')
    text = text.replace('16                      0.61              Pass',
                        '16                      0.61              Fail')
    assert 'Fail' in text
    result = osu.parse(text)
    assert not result.ok
    assert result.reason == 'OSU validation Fail at 16 bytes'


def test_data_validation_error_line_fails_the_run():
    text = (read('v7.2_osu_latency_validation_m1-64_np2.out') +
            'DATA VALIDATION ERROR: osu_latency exited with status 1 on '
            'message size 64.\n')
    result = osu.parse(text)
    assert not result.ok
    assert result.reason.startswith('DATA VALIDATION ERROR')


def test_chosen_message_size():
    result = osu.parse(read('v7.4_osu_bw_np2.out'), size=1048576)
    assert result.value('bandwidth') == pytest.approx(9555.83)
    assert result.details['size'] == 1048576
    latency = osu.parse(read('v5.9_osu_latency_np2.out'), size=0)
    assert latency.value('latency') == pytest.approx(0.70)


def test_absent_size_in_a_curve_fails():
    # allreduce's default curve stops at 1 MiB: 4 MiB is not there
    result = osu.parse(read('v7.4_osu_allreduce_np2.out'), size=4194304)
    assert not result.ok
    assert 'no row for 4194304 bytes' in result.reason
    assert '1..1048576' in result.reason


def test_single_size_run_names_the_size_it_used():
    result = osu.parse(read('osu_bw_v7.5_oci-x9-2node-256MiB.out'))
    assert '268435456 bytes' in result.details['size_note']
    assert result.details['curve'] == [
        {'size': 268435456, 'bandwidth': 12254.16}]


def test_cuda_buffers_are_recorded():
    result = osu.parse(read('osu_bw_v7.5_cuda-DD_a100-oci-2node-256MiB.out'))
    assert result.details['device'] == 'cuda'
    assert result.details['benchmark'] == 'MPI-CUDA Bandwidth'
    nccl = osu.parse(
        read('osu_xccl_allreduce_v7.5_cuda-DD_a100-oci-2node-16gpu.out'))
    assert nccl.details['benchmark'] == 'NCCL-CUDA Allreduce Latency'
    assert nccl.details['device'] == 'cuda'


def test_5x_device_buffer_line():
    # OMB 5.x prints the buffer placement line under the title for D D runs
    text = read('v5.9_osu_bw_np2.out').replace(
        '# OSU MPI Bandwidth Test v5.9\n',
        '# OSU MPI-CUDA Bandwidth Test v5.9\n# Send Buffer on DEVICE (D) and '
        'Receive Buffer on DEVICE (D)\n')
    result = osu.parse(text)
    assert result.ok
    assert result.details['buffers'] == 'device->device'
    assert result.details['device'] == 'cuda'
    assert result.value('bandwidth') == pytest.approx(3709.29)


def test_host_host_buffers():
    result = osu.parse(read('osu_bibw_v5.9_HH_kaust-ibex-a100-2node.out'))
    assert result.details['device'] == 'host'


@pytest.mark.parametrize('name', ['v5.9_osu_latency_version_flag.out',
                                  'v7.4_osu_latency_version_flag.out'])
def test_version_flag_output_has_no_results(name):
    result = osu.parse(read(name))
    assert not result.ok
    assert 'only the title line' in result.reason


def test_usage_text_fails():
    result = osu.parse(read('v7.4_osu_latency_bad_option.out'))
    assert not result.ok
    assert 'Usage: osu_latency [options]' in result.reason
    stderr = osu.parse(read('v7.4_osu_latency_bad_option.err'))
    assert stderr.reason == 'OSU benchmark did not run: Invalid option [-n]'


@pytest.mark.parametrize('version', ['v5.3', 'v7.4'])
def test_one_process_refusal(version):
    assert not osu.parse(read(f'{version}_osu_latency_np1_error.out')).ok
    result = osu.parse(read(f'{version}_osu_latency_np1_error.err'))
    assert not result.ok
    assert 'This test requires exactly two processes' in result.reason


def test_mpi_abort_after_results_fails():
    text = (read('v7.4_osu_latency_np2.out') +
            read('v7.4_osu_latency_np1_error.err'))
    result = osu.parse(text)
    assert not result.ok
    assert result.reason == ('MPI abort: Primary job  terminated normally, '
                             'but 1 process returned')


def test_empty_output():
    for text in ('', '\n\n', None):
        result = osu.parse(text)
        assert not result.ok
        assert 'empty output' in result.reason


def test_cut_in_the_middle_of_a_row():
    text = read('v7.4_osu_latency_np2.out')
    cut = text[:text.index('2048') + 10]
    result = osu.parse(cut)
    assert not result.ok
    assert result.reason == 'output cut in the row for 2048 bytes (truncated)'


def test_cut_half_way_misses_the_bandwidth_size():
    text = read('v5.3_osu_bw_np2.out')
    result = osu.parse(text[:len(text) // 2])
    assert not result.ok
    assert result.reason == 'output cut in the row for 1024 bytes (truncated)'
    # cut exactly at a line end: the 4 MiB row is simply missing
    whole_lines = text[:text.index('2097152')]
    assert 'no row for 4194304 bytes' in osu.parse(whole_lines).reason


def test_cut_before_any_row():
    text = read('v7.4_osu_bibw_np2.out')
    result = osu.parse(text[:text.index('1      ')])
    assert not result.ok
    assert 'no result rows' in result.reason


def test_foreign_outputs():
    hpcc = (helpers.DATA / 'hpcc' /
            'hpcc-1.5.0_debian_np2_N2000_NB80_P1Q2.hpccoutf.txt').read_text()
    stage = (helpers.DATA / 'mpi-stage' /
             'np1_first_copy.err').read_text()
    for text in (hpcc, stage, 'hello world\n'):
        result = osu.parse(text)
        assert not result.ok
        assert 'not osu output' in result.reason


def test_registry_and_json():
    result = parsers.parse('osu', read('v7.4_osu_latency_np2.out'))
    assert result.to_json()['metrics'] == {
        'latency': {'value': 4.50, 'unit': 'us'}}


def test_tail_latency_columns():
    # OMB 7.x -z adds percentile columns; no verbatim sample was found, so
    # this header follows the column names third-party parsers expect.
    text = read('v7.4_osu_latency_m0-1024_validation_np2.out').replace(
        '# Size       Avg Latency(us)        Validation',
        '# Size       Avg Latency(us)   P50 Tail Lat(us)   P90 Tail Lat(us)'
        '   P99 Tail Lat(us)')
    text = text.replace('8                       1.74              Pass',
                        '8                       1.74   1.70   1.90   2.50')
    text = '\n'.join(line for line in text.splitlines()
                     if 'Pass' not in line) + '\n'
    result = osu.parse(text)
    assert result.ok, result.reason
    assert result.value('latency') == pytest.approx(1.74)
    assert result.details['curve'] == [{
        'size': 8, 'latency': 1.74, 'p50_latency': 1.70,
        'p90_latency': 1.90, 'p99_latency': 2.50}]


def test_failure_cause_from_stderr():
    assert osu.failure_cause(read('v7.4_osu_latency_np1_error.err')) == \
        'This test requires exactly two processes'
    assert osu.failure_cause(read('v7.4_osu_latency_bad_option.err')) == \
        'Invalid option [-n]'
    abort = (DATA.parent / 'mpi-stage' /
             'np1_fail_missing_source.err').read_text().split('\n', 2)[2]
    assert osu.failure_cause(abort) == (
        'MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD')
    assert osu.failure_cause('') is None
    assert osu.failure_cause(None) is None
