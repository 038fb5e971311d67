"""The ior parser on real IOR outputs (tests/support/data/ior, copied from the
corpus with its PROVENANCE files)."""
import pytest

from checks.parsers import parse
from tests.support.helpers import read_data

# file -> (write MiB/s, read MiB/s): the Mean(MiB) of the summary rows
# (JSON: bwMeanMIB; CSV: mean of the per-iteration bw column), read by eye.
GOOD = {
    'ior-3.2-dev_akrr-16tasks-2019-partial.out': (143.22, 9049.20),
    'ior-3.2_aws-fsx-1task-2018.out': (2004.51, 13587.69),
    'ior-3.3_aws-fsx-lustre-1task-2022.out': (3475.49, 12521.52),
    'ior-4.x_posix-4tasks-verbose-iops-latency-stonewall.out':
        (580.00, 1201.51),
    'v3.2.1_blog_posix_w_r_C_e_g_F_s16.out': (826.60, 15303.61),
    'v3.2.1_posix_json_summary.out': (1399.6707, 14616.7110),
    'v3.3.0_posix_json_summary.out': (2035.9764, 14486.5076),
    'v3.3.0_posix_shared_file_i3.out': (1455.71, 15163.56),
    'v4.0.0_blog_posix_w_r_C_e_g_F_s16.out': (613.91, 12827.84),
    'v4.0.0_posix_json_summary.out': (1676.4433, 16661.6260),
    'v4.0.0_posix_shared_file_i3.out': (1578.67, 18543.52),
    'v4.1.0+dev_blog_posix_w_r_C_e_g_F_s16.out': (205.87, 1097.09),
    'v4.1.0+dev_mpiio_w_r.out': (1011.40, 2312.13),
    'v4.1.0+dev_posix_csv_summary.out': (1071.2180, 5036.9740),
    'v4.1.0+dev_posix_json_summary.out': (1306.2870, 961.0767),
    # three iterations: Mean(MiB), not the first per-iteration row (137.59)
    'v4.1.0+dev_posix_shared_file_i3.out': (295.65, 9036.82),
    'v4.1.0+dev_posix_w_r_C_e_g_F_s16_D10.out': (589.33, 2339.69),
    'v4.1.0+dev_posix_read_only_existing.out': (None, 11414.04),
    'v4.1.0+dev_posix_write_keep_G111.out': (8339.61, None),
    'v4.1.0+dev_posix_write_only_keep.out': (1163.91, None),
}

FAILED = {
    'v3.2.1_fail_unwritable_path.out': 'unable to statfs',
    'v3.3.0_fail_unwritable_path.out': 'Not a directory',
    'v4.0.0_fail_unwritable_path.out': 'Not a directory',
    'v4.1.0+dev_fail_unwritable_path.out': 'open64',
    'v3.2.1_posix_shared_file_i3.out': 'requires xfer-size == block-size',
    'ior-tutorial_lustre-cori-results-fragment.out': 'truncated',
    'mdtest-4.1.0+dev_n200_i2.out': 'mdtest',
    'mdtest-4.1.0+dev_files_only_unique_dir_n100.out': 'mdtest',
}


@pytest.mark.parametrize('name', sorted(GOOD))
def test_summary_mean_bandwidth(name):
    result = parse('ior', read_data('ior', name))
    write, read = GOOD[name]
    assert result.ok, result.reason
    if write is None:
        assert 'write_bandwidth_mib' not in result.metrics
    else:
        assert result.value('write_bandwidth_mib') == pytest.approx(write)
    if read is None:
        assert 'read_bandwidth_mib' not in result.metrics
    else:
        assert result.value('read_bandwidth_mib') == pytest.approx(read)
    assert all(m.unit == 'MiB/s' for m in result.metrics.values())


@pytest.mark.parametrize('name', sorted(FAILED))
def test_failed_runs_say_why(name):
    result = parse('ior', read_data('ior', name))
    assert not result.ok
    assert FAILED[name] in result.reason
    assert result.metrics == {}


def test_mpi_abort_on_stderr_is_a_failure():
    text = read_data('ior', 'v4.1.0+dev_fail_unwritable_path.err')
    result = parse('ior', text)
    assert not result.ok and 'MPI_ABORT' in result.reason


@pytest.mark.parametrize('name', ['v4.0.0_blog_posix_w_r_C_e_g_F_s16.out',
                                  'v3.2.1_blog_posix_w_r_C_e_g_F_s16.out'])
def test_cut_before_the_read_summary_row_is_truncated(name):
    text = read_data('ior', name)
    cut = text[:text.index('\nread', text.index('Summary of all tests'))]
    result = parse('ior', cut)
    assert not result.ok
    assert 'no read row' in result.reason and 'truncated' in result.reason


def test_cut_before_the_summary_is_truncated():
    text = read_data('ior', 'v4.1.0+dev_posix_shared_file_i3.out')
    result = parse('ior', text[:text.index('Summary of all tests')])
    assert not result.ok and 'truncated' in result.reason


def test_cut_json_summary_is_truncated():
    text = read_data('ior', 'v4.1.0+dev_posix_json_summary.out')
    result = parse('ior', text[:text.index('"bwMeanMIB"')])
    assert not result.ok and 'truncated' in result.reason


@pytest.mark.parametrize('text,needle', [
    ('', 'empty'),
    ('# nccl-tests\n# Avg bus bandwidth    : 1.2\n', 'not ior'),
    ('STREAM version $Revision: 5.10 $\nTriad: 1.0\n', 'not ior'),
])
def test_foreign_text(text, needle):
    result = parse('ior', text)
    assert not result.ok and needle in result.reason


def test_data_check_errors_fail_the_run():
    text = read_data('ior', 'v4.1.0+dev_posix_write_keep_G111.out')
    text += 'WARNING: Incorrect data on read (32 errors found).\n'
    result = parse('ior', text)
    assert not result.ok and 'Incorrect data on read' in result.reason


def test_the_data_each_phase_moved_is_rate_times_time():
    from checks.parsers import ior
    # 4 tasks x 10 GiB asked (aggs 40960 MiB): 580 MiB/s for 70.62 s
    result = ior.parse(read_data(
        'ior', 'ior-4.x_posix-4tasks-verbose-iops-latency-stonewall.out'))
    assert result.details['data_mib'] == {'write': 40959.94,
                                          'read': 40960.09}
    # the metrics stay the contract's two
    assert set(result.metrics) == {'write_bandwidth_mib',
                                   'read_bandwidth_mib'}
