"""mpi-stage parser against real stderr captures (tests/support/data/mpi-stage)."""

import pytest

from checks import parsers
from checks.parsers import mpi_stage
from tests.support import helpers

DATA = helpers.DATA / 'mpi-stage'


def read(name):
    # newline='' keeps the carriage returns of the progress lines
    with open(DATA / name, newline='') as fp:
        return fp.read()


# file -> (bandwidth MiB/s or None for no copy, copy phase s, total s),
# read by eye; the copy phase is printed negative by mpi_stage's sign bug.
COPIES = {
    'np1_first_copy.err': (209.447, 0.956176, 0.956323),
    'np1_overwrite_postvalidate_checksum.err': (526.232, 0.382121, 3.34382),
    'np1_postvalidate_size_newdest.err': (318.686, 0.628703, 0.628957),
    'np2_fakenodes_first_copy.err': (188.663, 1.06155, 1.1169),
    'np2_fakenodes_one_node_missing_postvalidate_checksum.err':
        (327.857, 0.620277, 2.3844),
    'np2_fakenodes_overwrite_postvalidate_size_srcrank1.err':
        (243.558, 0.822519, 0.860542),
    'np2_fakenodes_source_node_local_rank0.err': (169.182, 1.189, 1.23595),
    'blog-gb300-156nodes-excerpt.out': (3007.14, 5.21189, 5.2563),
}
NO_COPIES = {
    'np1_second_skip.err': (8.69e-07, 0.000141425),
    'np1_checksum_prevalidate_skip.err': (1.514e-06, 4.29958),
    'np2_fakenodes_checksum_prevalidate_skip.err': (4.8938e-05, 1.84425),
}
# the tool's own ERROR line
ERRORS = {
    'np1_fail_missing_args.err': 'ERROR: [vm] Missing --source or --dest',
    'np1_fail_missing_source.err':
        'ERROR: [vm] Source file not found on any node',
    'np1_fail_dest_dir_uncreatable.err':
        "ERROR: [vm] Failed to create destination directory '/proc/mpistage'"
        ': No such file or directory',
    'np2_fakenodes_fail_source_rank_lacks_file.err':
        'ERROR: [vm] Selected source rank does not have the file',
    'np2_same_host_refused.err':
        'ERROR: [vm] More than one MPI rank on a node',
}


@pytest.mark.parametrize('name', sorted(COPIES))
def test_copy_runs(name):
    bandwidth, copy_time, total = COPIES[name]
    result = mpi_stage.parse(read(name))
    assert result.ok, result.reason
    assert result.value('bandwidth') == pytest.approx(bandwidth)
    # mpi_stage prints "MB/s" but divides bytes by 2^20
    assert result.metrics['bandwidth'].unit == 'MiB/s'
    assert result.value('copy_time') == pytest.approx(copy_time)
    assert result.value('total_time') == pytest.approx(total)
    assert result.metrics['total_time'].unit == 's'
    assert result.details['copied'] is True
    assert 'skipped' not in result.details


@pytest.mark.parametrize('name', sorted(NO_COPIES))
def test_no_copy_runs(name):
    copy_time, total = NO_COPIES[name]
    result = mpi_stage.parse(read(name))
    assert result.ok, result.reason
    assert 'bandwidth' not in result.metrics
    assert result.value('copy_time') == pytest.approx(copy_time)
    assert result.value('total_time') == pytest.approx(total)
    assert result.details['copied'] is False
    assert 'already holds the file' in result.details['skipped']


@pytest.mark.parametrize('name', sorted(ERRORS))
def test_errors_give_the_tools_message(name):
    result = mpi_stage.parse(read(name))
    assert not result.ok
    assert result.reason == ERRORS[name]


def test_every_sample_is_covered():
    samples = {p.name for p in DATA.iterdir()
               if p.stat().st_size and not p.name.startswith('PROVENANCE')}
    assert samples == set(COPIES) | set(NO_COPIES) | set(ERRORS)


def test_stdout_of_a_run_is_empty():
    result = mpi_stage.parse(read('np1_first_copy.out'))
    assert not result.ok
    assert '--verbose' in result.reason


def test_progress_and_signed_timings_are_kept():
    details = mpi_stage.parse(read('np1_first_copy.err')).details
    assert details['progress'][0] == [8, 193.665]
    assert details['progress'][-1] == [100, 209.463]
    assert len(details['progress']) == 13
    assert details['timings'] == {
        'topology_check': 0.95625, 'source_metadata': -6.6614e-05,
        'pre_validation': -4.069e-06, 'copy_phase': -0.956176,
        'post_validation': -1.09e-07, 'total_time': 0.956323}
    assert details['topology_check_s'] == pytest.approx(8.3542e-05)
    assert details['source_rank'] == 0
    assert details['post_validated'] is False


def test_source_rank_and_checksum():
    details = mpi_stage.parse(
        read('np2_fakenodes_overwrite_postvalidate_size_srcrank1.err')).details
    assert details['source_rank'] == 1
    assert details['post_validated'] is True
    checksum = mpi_stage.parse(
        read('np1_checksum_prevalidate_skip.err')).details
    assert checksum['source_checksum'] == '2800053759539774331'


def test_no_copy_run_takes_milliseconds():
    # the size-validated second run is the fast path the check relies on
    result = mpi_stage.parse(read('np1_second_skip.err'))
    assert result.value('total_time') < 0.001


def test_crlf_and_lf_only_read_the_same():
    text = read('np1_first_copy.err')
    assert '\r' in text
    same = mpi_stage.parse(text.replace('\r', '\n'))
    assert same.value('bandwidth') == pytest.approx(209.447)


def test_cut_during_the_copy():
    text = read('np1_first_copy.err')
    result = mpi_stage.parse(text[:len(text) // 2])
    assert not result.ok
    assert result.reason == ('copy did not complete (last progress 56%): '
                             'truncated output')


def test_cut_inside_the_timings():
    text = read('np2_fakenodes_first_copy.err')
    for cut in (text.index('  Copy phase'), len(text) - 3):
        result = mpi_stage.parse(text[:cut])
        assert not result.ok
        assert 'no Timings block' in result.reason


def test_cut_before_the_copy_decision():
    text = read('np2_fakenodes_checksum_prevalidate_skip.err')
    result = mpi_stage.parse(text[:text.index('[0] Copy required')])
    assert not result.ok
    assert "no '[0] Copy required' line" in result.reason


def test_no_copy_without_its_line_is_cut():
    text = read('np1_second_skip.err')
    result = mpi_stage.parse(text[:text.index('[0] No copy needed')])
    assert not result.ok
    assert 'truncated' in result.reason


def test_empty_output():
    for text in ('', '\r\n', None):
        result = mpi_stage.parse(text)
        assert not result.ok
        assert 'empty output' in result.reason


def test_foreign_outputs():
    osu = (helpers.DATA / 'osu' /
           'v7.4_osu_latency_np2.out').read_text()
    for text in (osu, 'Segmentation fault\n'):
        result = mpi_stage.parse(text)
        assert not result.ok
        assert 'not mpi-stage output' in result.reason


def test_older_error_format():
    # an older mpi_stage prints errors without the host name
    result = mpi_stage.parse('ERROR: Source file not found on any node\n')
    assert result.reason == 'ERROR: Source file not found on any node'


def test_registry_name():
    assert parsers.parse('mpi-stage', read('np1_first_copy.err')).ok
