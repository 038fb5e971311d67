"""nccl-tests / rccl-tests parser against real outputs (tests/support/data/nccl-tests).

Every expected value below was read by eye from the file it belongs to.
"""
import json
import subprocess
import sys

import pytest

from checks import parsers
from checks.parsers import nccl
from tests.support import helpers

ROOT = helpers.REPO
DATA = helpers.DATA / 'nccl-tests'


def read(name):
    return (DATA / name).read_text()


# file -> avg_busbw (None: no Avg line), busbw, busbw_inplace, latency_small,
#         ranks (None: no "# Rank" lines), table rows
GOOD = {
    'all_gather_gb10-dgxspark-2node-v2.18.3-1G-4G.out':
        (21.4033, 22.14, 22.46, 27211.0, 2, 3),
    'all_reduce_a100-oci-b4.8-16gpu-2node-v2.17.9-trimmed.out':
        (None, 189.60, 189.50, 10887.4, 16, 4),
    'all_reduce_a100-oci-oke-16gpu-2node.out':
        (66.4834, 237.94, 237.52, 36.47, 16, 31),
    'all_reduce_h100-1node-8gpu-g8-single-process.out':
        (448.212, 470.73, 470.63, 1119.8, 8, 4),
    'all_reduce_h100-a3mega-16gpu-2node.out':
        (70.742, 338.82, 337.35, 135.8, 16, 31),
    'all_reduce_h100-aws-p5-2node-mpirun-tagged-partial.out':
        (156.742, 483.05, 483.35, 12.90, None, 32),
    'rccl_all_reduce_mi300x-oci-16gpu-2node.out':
        (None, 358.37, 358.24, 5753.0, 16, 5),
    'rccl_all_reduce_mi355x-1node-8gpu-v2.17.9.out':
        (105.615, 402.55, 401.90, 42.02, 8, 29),
    'rccl_all_reduce_mi355x-2node-16gpu-ucxwarn.out':
        (129.28, 385.98, 385.95, 37.35, 16, 31),
    # size-0 rows first: the smallest real size is 128 B
    'rccl_alltoall_mi355x-1node-8gpu-v2.17.9.out':
        (58.3947, 322.22, 316.42, 40.87, 8, 25),
}


@pytest.mark.parametrize('name', sorted(GOOD))
def test_corpus_values(name):
    avg, busbw, inplace, latency, ranks, rows = GOOD[name]
    result = nccl.parse(read(name))
    assert result.ok, result.reason
    assert result.value('busbw') == busbw
    assert result.metrics['busbw'].unit == 'GB/s'
    assert result.value('busbw_inplace') == inplace
    assert result.value('latency_small') == latency
    assert result.metrics['latency_small'].unit == 'us'
    if avg is None:
        assert 'avg_busbw' not in result.metrics
        assert 'Avg bus bandwidth' in result.details['note']
    else:
        assert result.value('avg_busbw') == avg
    assert result.details.get('ranks') == ranks
    assert len(result.details['rows']) == rows
    json.dumps(result.to_json())  # details stay JSON-safe


def test_versions_and_devices():
    gb10 = nccl.parse(read('all_gather_gb10-dgxspark-2node-v2.18.3-1G-4G.out'))
    assert gb10.details['suite'] == 'nccl-tests'
    assert gb10.details['tests_version'] == '2.18.3'
    assert gb10.details['library_version'] == '2.28.9'  # nccl-library=22809
    assert gb10.details['collective'] == 'all_gather_perf'
    assert gb10.details['nodes'] == 2
    assert gb10.details['devices'][1] == {
        'rank': 1, 'host': 'spark-4440', 'device': 0,
        'bus_id': '000f:01:00', 'name': 'NVIDIA GB10'}

    oci = nccl.parse(read(
        'all_reduce_a100-oci-b4.8-16gpu-2node-v2.17.9-trimmed.out'))
    assert oci.details['nccl_version'] == '2.29.3+cuda13.1'
    # rank lines 1-6 and 9-14 were cut from this capture: 16 ranks anyway
    assert [d['rank'] for d in oci.details['devices']] == [0, 7, 8, 15]

    mi300x = nccl.parse(read('rccl_all_reduce_mi300x-oci-16gpu-2node.out'))
    assert mi300x.details['suite'] == 'rccl-tests'
    assert mi300x.details['tests_version'] == 'develop:a52452e'
    assert mi300x.details['devices'][0]['name'] is None  # no device name

    mi355x = nccl.parse(read('rccl_all_reduce_mi355x-2node-16gpu-ucxwarn.out'))
    assert mi355x.details['rccl_version'] == '2.27.7-HEAD:96a25b5'
    assert mi355x.details['max_bytes'] == 17179869184


def test_curve_keeps_both_sides():
    result = nccl.parse(read('all_reduce_a100-oci-oke-16gpu-2node.out'))
    first = result.details['rows'][0]
    assert first['size'] == 8 and first['count'] == 2
    assert first['oop_time'] == 36.47 and first['ip_time'] == 34.74
    assert result.details['largest_size'] == 8589934592
    assert result.value('algbw') == 126.90


def test_alltoall_in_place_wrong_is_not_applicable():
    result = nccl.parse(read('rccl_alltoall_mi355x-1node-8gpu-v2.17.9.out'))
    last = result.details['rows'][-1]
    assert last['oop_wrong'] == '0' and last['ip_wrong'] == 'N/A'
    assert result.details['smallest_size'] == 128


def test_sendrecv_without_footer_fails():
    result = nccl.parse(read('sendrecv_a100-1node-8gpu-g8-no-footer.out'))
    assert not result.ok
    assert 'Out of bounds values' in result.reason
    # the table itself was read (in-place #wrong is N/A for sendrecv)
    assert result.details['rows'][-1]['ip_wrong'] == 'N/A'


def test_old_error_column_and_failed_validation():
    result = nccl.parse(read(
        'all_gather_v100-1node-g8-2020-error-column-oob-failed.out'))
    assert not result.ok
    assert result.reason.startswith('2 out-of-bounds values')
    row = result.details['rows'][0]
    assert row['oop_busbw'] == 129.05 and row['oop_wrong'] == '1e+00'


def test_srun_label_prefix_gives_same_values():
    # srun -l puts "0: " before every line rank 0 prints
    original = read('all_reduce_h100-a3mega-16gpu-2node.out')
    prefixed = ''.join(f'0: {line}' for line in
                       original.splitlines(keepends=True))
    result = nccl.parse(prefixed)
    assert result.ok, result.reason
    assert result.value('busbw') == 338.82
    assert result.value('avg_busbw') == 70.742
    assert result.details['ranks'] == 16


def test_expected_ranks():
    text = read('all_reduce_h100-1node-8gpu-g8-single-process.out')
    assert nccl.parse(text, expected_ranks=8).ok
    short = nccl.parse(text, expected_ranks=16)
    assert not short.ok
    assert 'ran on 8 ranks, expected 16' in short.reason
    # the parsers registry passes options through
    assert not parsers.parse('nccl', text, expected_ranks=16).ok

    untagged = nccl.parse(
        read('all_reduce_h100-aws-p5-2node-mpirun-tagged-partial.out'),
        expected_ranks=16)
    assert not untagged.ok
    assert 'no "# Rank" lines' in untagged.reason


def test_wrong_values_fail():
    # real file with one #wrong cell edited from 0 to 3
    text = read('all_reduce_h100-1node-8gpu-g8-single-process.out')
    row = ('536870912     134217728     float     sum      -1   2157.5  '
           '248.83  435.46      0   2154.8  249.16  436.02      0')
    assert row in text
    result = nccl.parse(text.replace(row, row[:-1] + '3'))
    assert not result.ok
    assert result.reason == '3 wrong values at size 536870912 (#wrong column)'


def test_nccl_failure_line_fails():
    text = read('all_reduce_h100-a3mega-16gpu-2node.out').splitlines()[:30]
    text.append("ztan-mig-235z: Test NCCL failure common.cu:1279 "
                "'unhandled system error'")
    result = nccl.parse('\n'.join(text))
    assert not result.ok
    assert result.reason.startswith('nccl-tests reported: ztan-mig-235z: '
                                    'Test NCCL failure')


def test_launcher_abort_fails():
    text = read('all_reduce_a100-oci-oke-16gpu-2node.out')
    text += 'srun: error: node-2: task 9: Exited with exit code 1\n'
    result = nccl.parse(text)
    assert not result.ok
    assert 'task 9' in result.reason


@pytest.mark.parametrize('text', ['', '   \n\n'])
def test_empty(text):
    result = nccl.parse(text)
    assert not result.ok and result.reason == 'empty output'


def test_truncated_in_the_table():
    # cut in the middle of the 18th row (rows start on line 24)
    lines = read('all_reduce_h100-a3mega-16gpu-2node.out').splitlines()
    result = nccl.parse('\n'.join(lines[:40] + [lines[40][:45]]))
    assert not result.ok
    assert 'missing footer' in result.reason
    assert len(result.details['rows']) == 17


def test_truncated_before_the_table():
    lines = read('all_reduce_h100-a3mega-16gpu-2node.out').splitlines()
    result = nccl.parse('\n'.join(lines[:12]))
    assert not result.ok
    assert 'no nccl-tests results table' in result.reason


@pytest.mark.parametrize('path', [
    DATA / 'foreign' / 'osu_latency_v7.5_oci-x9-2node-single-size.out',
    DATA.parent / 'perftest' / 'ib_write_bw_ndr-cx7-b2b-gbits.out',
])
def test_foreign_text(path):
    result = nccl.parse(path.read_text())
    assert not result.ok
    assert 'no nccl-tests results table' in result.reason


def test_cli_parse_nccl():
    name = 'all_reduce_h100-1node-8gpu-g8-single-process.out'
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'scripts' / 'clusterproof'), 'parse',
         'nccl', str(DATA / name)],
        capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out['ok'] is True and out['reason'] is None
    assert out['metrics']['avg_busbw'] == {'value': 448.212, 'unit': 'GB/s'}
    assert out['metrics']['busbw'] == {'value': 470.73, 'unit': 'GB/s'}

    failed = subprocess.run(
        [sys.executable, str(ROOT / 'scripts' / 'clusterproof'), 'parse',
         'nccl', str(DATA / 'sendrecv_a100-1node-8gpu-g8-no-footer.out')],
        capture_output=True, text=True, cwd=ROOT)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)['ok'] is False
