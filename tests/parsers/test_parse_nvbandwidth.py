"""nvbandwidth parser against real outputs (tests/support/data/nvbandwidth, see its
PROVENANCE.md). Every expected value was read by eye from the line named
beside it."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from checks import parsers
from checks.parsers import nvbandwidth

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / 'tests' / 'support' / 'data' / 'nvbandwidth'
FULL = 'nvbandwidth-v0.2-8xH800-full-run-llm-action.out'


def read(name):
    return (DATA / name).read_text()


def test_full_v02_run_every_gpu_of_the_host_testcases():
    result = nvbandwidth.parse(read(FULL))
    assert result.ok, result.reason
    # line 25: host_to_device_memcpy_ce, GPU 0 55.28, GPU 5 55.34
    assert result.value('host_to_device_memcpy_ce_gpu0') == 55.28
    assert result.value('host_to_device_memcpy_ce_gpu5') == 55.34
    assert result.metrics['host_to_device_memcpy_ce_gpu0'].unit == 'GB/s'
    # line 32: device_to_host_memcpy_ce, GPU 4 55.09
    assert result.value('device_to_host_memcpy_ce_gpu4') == 55.09
    # line 46: device_to_host_bidirectional_memcpy_ce, GPU 1 50.50
    assert result.value('device_to_host_bidirectional_memcpy_ce_gpu1') == 50.5
    gpus = {name.rsplit('_gpu', 1)[1] for name in result.metrics
            if name.startswith('host_to_device_memcpy_ce_')}
    assert gpus == {str(i) for i in range(8)}
    # lines 12-19: eight devices, no bus ids in v0.2
    assert result.details['devices']['7'] == {'name': 'NVIDIA H800',
                                              'bus_id': None}
    assert result.details['version'] == 'v0.2'
    assert result.details['driver'] == '525.105.17'


def test_a_pair_testcase_gives_each_gpu_its_slowest_peer():
    result = nvbandwidth.parse(read(FULL))
    # line 53: row 0's smallest cell is 171.88, GPU 4
    assert result.value('device_to_device_memcpy_read_ce_gpu0') == 171.88
    peers = result.details['slowest_peer']['device_to_device_memcpy_read_ce']
    assert peers['0'] == 4
    # line 56: row 3's smallest is 171.99 (GPU 1); line 60: row 7's 172.07
    # (GPU 0), the N/A diagonal left out
    assert result.value('device_to_device_memcpy_read_ce_gpu3') == 171.99
    assert peers['3'] == 1
    assert result.value('device_to_device_memcpy_read_ce_gpu7') == 172.07
    assert peers['7'] == 0
    # line 62: the SUM is kept with the matrix
    assert result.details['testcases']['device_to_device_memcpy_read_ce'][
        'sum'] == 9643.22


def test_one_pair_testcase_alone():
    result = nvbandwidth.parse(read('nvbandwidth-v0.2-8xH800-d2d-read-ce-'
                                    'llm-action.out'))
    assert result.ok, result.reason
    assert len(result.metrics) == 8    # one per GPU, one testcase (line 21)
    peers = result.details['slowest_peer']['device_to_device_memcpy_read_ce']
    # line 24: row 0's smallest cell 172.13 is GPU 6's; line 28: row 4's
    # 171.88 is GPU 1's; line 31: row 7's 172.02 is GPU 3's
    assert (result.value('device_to_device_memcpy_read_ce_gpu0'),
            peers['0']) == (172.13, 6)
    assert (result.value('device_to_device_memcpy_read_ce_gpu4'),
            peers['4']) == (171.88, 1)
    assert (result.value('device_to_device_memcpy_read_ce_gpu7'),
            peers['7']) == (172.02, 3)
    # line 33
    assert result.details['testcases']['device_to_device_memcpy_read_ce'][
        'sum'] == 9642.08


def test_all_gpus_testcases_read_one_cell_per_gpu_column():
    result = nvbandwidth.parse(read(FULL))
    # line 137: all_to_one_write_ce, "All Gpus -> GPU(column)", GPU 2 177.71
    assert result.value('all_to_one_write_ce_gpu2') == 177.71
    assert 'all_to_one_write_ce_gpu0' in result.metrics


def test_multinode_processes_are_the_gpus_with_their_hosts_and_bus_ids():
    name = 'nvbandwidth-v0.7-multinode-d2d-read-ce-GB200-2x4-OKE-k8s.out'
    result = nvbandwidth.parse(read(name))
    assert result.ok, result.reason
    key = 'multinode_device_to_device_memcpy_read_ce'
    # line 32: process 0's smallest is 797.73 (process 6)
    assert result.value(f'{key}_gpu0') == 797.73
    assert result.details['slowest_peer'][key]['0'] == 6
    # line 35: process 3's smallest is 797.73 (process 7)
    assert result.value(f'{key}_gpu3') == 797.73
    # line 20: "Process 4 (nvbandwidth-test-worker-1): device 0: HGX GB200
    # (00000008:01:00)"
    assert result.details['devices']['4'] == {
        'host': 'nvbandwidth-test-worker-1', 'local_device': 0,
        'name': 'HGX GB200', 'bus_id': '00000008:01:00'}


def test_a_run_cut_short_fails_and_keeps_what_finished():
    name = 'nvbandwidth-GB300-DGX-Station-single-GPU-c2c-mlengineering-excerpt.out'
    result = nvbandwidth.parse(read(name))
    assert not result.ok
    assert result.reason.startswith(
        'device_to_host_bidirectional_memcpy_ce started but printed no '
        'complete matrix and SUM line')
    # line 6: host_to_device_memcpy_ce 359.05 finished before the cut
    assert result.value('host_to_device_memcpy_ce_gpu0') == 359.05
    assert 'device_to_host_bidirectional_memcpy_ce_gpu0' not in result.metrics


@pytest.mark.parametrize('name', [
    'nvbandwidth-README-example-d2d-write-ce-8GPU-excerpt.out',
    'nvbandwidth-README-example-h2d-ce-8GPU-excerpt.out'])
def test_a_matrix_without_its_sum_line_is_not_measured(name):
    result = nvbandwidth.parse(read(name))
    assert not result.ok
    assert 'no complete matrix and SUM line' in result.reason
    assert result.metrics == {}


def test_an_edited_fixture_with_more_gpus_than_devices_is_refused():
    result = nvbandwidth.parse(read('nvbandwidth-v0.6-GH200-superbench-'
                                    'DOUBTFUL.out'))
    assert not result.ok
    # lines 10-14: a 2x3 host_to_device matrix on a system of one GPU (line 8)
    assert ('host_to_device_memcpy_ce: its matrix has GPU 2 but the device '
            'list names 1 GPU(s)') in result.reason
    assert result.details['devices']['0']['bus_id'] == '00000009:01:00'
    assert result.details['waived'] == 17   # 17 "Waived:" lines
    # the latency testcase near the end is in ns
    assert result.metrics['host_device_latency_sm_gpu0'].unit == 'ns'
    assert result.value('host_device_latency_sm_gpu0') == 772.58


def _as_json(result) -> str:
    """The JSON document nvbandwidth -j writes (json_output.cpp of v0.8,
    NVIDIA/nvbandwidth commit 66746a3), filled with a text run's matrices."""
    cases = [{'name': name, 'status': 'Passed',
              'bandwidth_description': case['description'],
              'bandwidth_matrix': [['N/A' if cell is None else str(cell)
                                    for cell in row]
                                   for row in case['matrix']],
              'sum': case['sum']}
             for name, case in result.details['testcases'].items()]
    return json.dumps({'nvbandwidth': {
        'version': 'v0.8', 'git_version': 'v0.8',
        'CUDA Runtime Version': 12040, 'Driver Version': '550.54.15',
        'GPU Device list': [f'{i}: NVIDIA H800 (00000000:{i:02x}:00): (nd-1)'
                            for i in range(8)],
        'testcases': cases + [{'name': 'host_device_latency_sm',
                               'status': 'Waived'}]}}, indent=3)


def test_json_gives_the_same_metrics_as_text():
    text_result = nvbandwidth.parse(read(FULL))
    result = nvbandwidth.parse('some launcher line\n' + _as_json(text_result))
    assert result.ok, result.reason
    assert result.details['layout'] == 'json'
    assert {n: m.value for n, m in result.metrics.items()} == \
        {n: m.value for n, m in text_result.metrics.items()}
    assert result.details['devices']['3'] == {
        'name': 'NVIDIA H800', 'bus_id': '00000000:03:00', 'host': 'nd-1'}
    assert result.details['waived'] == 1


def test_json_testcase_with_an_error_fails_naming_it():
    document = {'nvbandwidth': {'testcases': [
        {'name': 'device_to_device_memcpy_read_ce', 'status': 'Error',
         'error': 'Peer access is not available'}]}}
    result = nvbandwidth.parse(json.dumps(document))
    assert not result.ok
    assert result.reason == ('device_to_device_memcpy_read_ce: Peer access '
                             'is not available')


def test_foreign_text_is_named_foreign():
    result = parsers.parse('nvbandwidth', read(FULL).replace('Running', 'Ran'))
    assert not result.ok
    assert result.reason.startswith('not nvbandwidth output')


def test_cli_parse_knows_nvbandwidth():
    done = subprocess.run([sys.executable, str(ROOT / 'scripts' /
                                               'clusterproof'),
                           'parse', 'nvbandwidth', str(DATA / FULL)],
                          capture_output=True, text=True, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out['ok'] is True and out['tool'] == 'nvbandwidth'
    assert out['metrics']['host_to_device_memcpy_ce_gpu0'] == {
        'value': 55.28, 'unit': 'GB/s'}


@pytest.mark.parametrize('text', [
    'Device 0: ' + ' ' * 400_000 + 'x',
    'Process 0 (h): device 0: ' + ' (' * 200_000,
    'CUDA Runtime Version: ' + ' ' * 400_000 + 'x',
    json.dumps({'nvbandwidth': {'GPU Device list': [
        '0: a (0000)' + ': (' * 130_000], 'testcases': []}})])
def test_long_header_and_device_lines_read_in_linear_time(text):
    # each took minutes with a lazy pattern ending in \s*$ before
    import time
    began = time.perf_counter()
    result = nvbandwidth.parse(text)
    assert time.perf_counter() - began < 5.0
    assert not result.ok


def test_babelstream_and_gpu_burn_long_lines_read_in_linear_time():
    import time
    from checks.parsers import babelstream, gpu_burn
    began = time.perf_counter()
    babelstream.parse('BabelStream\nImplementation: ' + ' ' * 400_000 + 'x')
    babelstream.parse('BabelStream\nUsing CUDA device ' + ' ' * 400_000 + 'x')
    gpu_burn.parse('GPU 0: ' + ' (UUID: ' * 50_000)
    assert time.perf_counter() - began < 5.0
