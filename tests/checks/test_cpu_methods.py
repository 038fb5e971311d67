"""Pure pieces of the CPU/storage methods: time limits, STREAM method
comparison, size profiles, IOR sizing and cache defeat, scratch names."""
import pytest

from checks.common import job_request, scratch, time_limit
from checks.cpu import stream_method
from checks.storage import ior
from tests.support.helpers import read_data


def test_time_limit_is_factor_times_expected_plus_margin():
    assert time_limit.limit_seconds(600, 3) == 600 * 3 + 300
    assert time_limit.limit_seconds(61, 1) == 420     # rounded up to minutes
    with pytest.raises(ValueError):
        time_limit.limit_seconds(0, 3)


def test_size_profile_auto_is_smoke_only_on_the_local_scheduler():
    assert job_request.resolve_profile('auto', 'local') == 'smoke'
    assert job_request.resolve_profile('auto', 'slurm') == 'full'
    assert job_request.resolve_profile('full', 'local') == 'full'
    with pytest.raises(ValueError):
        job_request.resolve_profile('huge', 'slurm')


def _replayed_fingerprint(env):
    from checks.parsers import stream
    result = stream.parse(read_data('stream', 'stream_c_omp2_20M.out'))
    return stream_method.run_fingerprint(result.details, env)


def test_a_stream_run_is_keyed_by_what_it_printed_and_where_it_ran():
    run = _replayed_fingerprint({'OMP_NUM_THREADS': '2',
                                 'OMP_PLACES': 'cores'})
    assert run == {'array_size': 20_000_000, 'ntimes': 10, 'threads': 2,
                   'places': 'cores', 'ranks': 1}
    # an explicit place list: its length and checksum, same list same label
    label = stream_method.places_label('{0:1},{4:1}')
    assert label.startswith('list2-')
    assert label == stream_method.places_label('{0:1},{4:1}')
    assert label != stream_method.places_label('{0:1},{8:1}')


def test_openmp_settings_beyond_the_key_must_match_too():
    reference = {'OMP_PLACES': '{0:1}', 'OMP_SCHEDULE': 'static',
                 'OMP_PROC_BIND': 'true'}
    assert stream_method.env_differences(
        reference, {'OMP_PROC_BIND': 'true', 'OMP_SCHEDULE': 'static'}) == []
    assert stream_method.env_differences(
        reference, {'OMP_PROC_BIND': 'true'}) == [
        'OMP_SCHEDULE=unset (reference: static)']


def test_ior_writes_more_than_the_node_can_cache():
    # a 768 GiB node, 8 tasks, 2 MiB blocks -> 1.5 x 768 GiB
    segments = ior.segments_beyond_memory(768, 8, '2M')
    assert segments * 8 * 2 * 2 ** 20 >= 1.5 * 768 * 2 ** 30
    assert ior.size_bytes('64k') == 65536 and ior.size_bytes('3') == 3
    with pytest.raises(ValueError):
        ior.size_bytes('2MB')


def test_ior_cache_defeat():
    assert ior.cache_defeat(2, False).startswith("reads of another node")
    assert ior.cache_defeat(1, True) == 'O_DIRECT'
    assert ior.cache_defeat(1, False) == ''


def test_scratch_names_hold_session_test_and_job():
    path = scratch.job_scratch_dir('/shared', 'clusterproof-ior', 'abc123')
    assert path.startswith('/shared/clusterproof-ior-')
    assert scratch.SESSION_TAG in path and 'abc123' in path
    assert path.endswith('${CLUSTERPROOF_JOB_TAG}')
    assert 'SLURM_JOB_ID' in scratch.JOB_TAG_COMMAND
    assert 'PBS_JOBID' in scratch.JOB_TAG_COMMAND
