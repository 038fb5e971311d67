"""perftest parser against real outputs (tests/support/data/perftest).

Every expected value below was read by eye from the file it belongs to.
"""
import json
import subprocess
import sys

import pytest

from checks.parsers import perftest
from tests.support import helpers

ROOT = helpers.REPO
DATA = helpers.DATA / 'perftest'
MIB_PER_SEC_IN_GBITS = 2 ** 20 * 8 / 1e9


def read(name):
    return (DATA / name).read_text()


# file -> printed BW peak, BW average (None: not measured), unit factor,
#         device, QPs, bidirectional, GPU memory, rows, message size used
BANDWIDTH = {
    'ib_read_bw_ndr-cx7-b2b-gbits.out':
        (328.64, 328.61, 1.0, 'mlx5_0', 1, False, False, 1, 65536),
    'ib_write_bw_ndr-cx7-b2b-gbits.out':
        (392.38, 392.34, 1.0, 'mlx5_0', 1, False, False, 1, 65536),
    'ib_send_bw_ndr-cx7-b2b-MiB.out':
        (46567.34, 46557.03, MIB_PER_SEC_IN_GBITS, 'mlx5_0', 1, False, False,
         1, 65536),
    'ib_write_bw_bidir-a-4qp_amd-ainic-400g-client.out':
        (779.21, 779.21, 1.0, 'ionic_1', 4, True, False, 23, 8388608),
    'ib_write_bw_bidir-a-4qp_amd-ainic-400g-server.out':
        (779.21, 779.21, 1.0, 'ionic_7', 4, True, False, 23, 8388608),
    'ib_write_bw_bidir-a-4qp_rocm-gdr-mi355x-server.out':
        (698.41, 697.97, 1.0, 'ionic_1', 4, True, True, 23, 8388608),
    'ib_read_bw_a-mlx4-fdr-MBsec.out':
        (3667.13, 3666.44, MIB_PER_SEC_IN_GBITS, 'mlx4_0', 1, False, False,
         23, 8388608),
    'ib_write_bw_a-cuda-dmabuf-h200-roce-gbits.out':
        (140.55, 140.40, 1.0, 'mlx5_3', 1, False, True, 23, 8388608),
    'ib_write_bw_D60-16qp-cuda-a40-roce-server.out':
        (None, 181.46, 1.0, 'mlx5_1', 16, False, True, 1, 65536),
}


@pytest.mark.parametrize('name', sorted(BANDWIDTH))
def test_bandwidth_files(name):
    (peak, average, factor, device, qps, bidir, gpu, rows,
     size) = BANDWIDTH[name]
    result = perftest.parse(read(name))
    assert result.ok, result.reason
    if peak is None:
        assert 'bw_peak' not in result.metrics
    else:
        assert result.value('bw_peak') == pytest.approx(peak * factor)
        assert result.metrics['bw_peak'].unit == 'Gb/s'
    assert result.value('bw_avg') == pytest.approx(average * factor)
    assert result.metrics['bw_avg'].unit == 'Gb/s'
    details = result.details
    assert (details['kind'], details['device'], details['qps']) == \
        ('bw', device, qps)
    assert details['bidirectional'] is bidir
    assert details['gpu_memory'] is gpu
    assert len(details['rows']) == rows
    assert details['msg_size'] == size
    assert details['row_used'] == 'largest message size'
    json.dumps(result.to_json())


def test_mib_and_old_mb_labels_are_both_binary_megabytes():
    # perftest divides by 0x100000 for both labels; the MsgRate column
    # proves it: bytes/s = msg rate * size = printed value * 2**20.
    send = perftest.parse(read('ib_send_bw_ndr-cx7-b2b-MiB.out'))
    assert send.details['unit_printed'] == 'MiB/sec'
    assert send.value('bw_avg') == pytest.approx(390.5487, abs=1e-4)
    from_msg_rate = 0.744912e6 * 65536 * 8 / 1e9
    assert send.value('bw_avg') == pytest.approx(from_msg_rate, rel=1e-5)

    read_bw = perftest.parse(read('ib_read_bw_a-mlx4-fdr-MBsec.out'))
    assert read_bw.details['unit_printed'] == 'MB/sec'
    row = next(r for r in read_bw.details['rows'] if r['#bytes'] == 65536)
    assert row['BW average[MB/sec]'] == 3659.01
    assert row['BW average[MB/sec]'] * 2 ** 20 == pytest.approx(
        row['MsgRate[Mpps]'] * 1e6 * 65536, rel=1e-4)


def test_test_names_and_sides():
    read_bw = perftest.parse(read('ib_read_bw_ndr-cx7-b2b-gbits.out'))
    assert read_bw.details['test'] == 'RDMA_Read'
    assert read_bw.details['link_type'] == 'IB'
    assert read_bw.details['rdma_cm'] == 'OFF'  # "rdma_cm QPs\t : OFF"
    assert 'side' not in read_bw.details
    send = perftest.parse(read('ib_send_bw_ndr-cx7-b2b-MiB.out'))
    assert send.details['test'] == 'Send'
    bidir = perftest.parse(read(
        'ib_write_bw_bidir-a-4qp_amd-ainic-400g-server.out'))
    assert bidir.details['test'] == 'RDMA_Write'
    assert bidir.details['side'] == 'server'
    assert bidir.value('msg_rate') == 0.011611


def test_duration_mode_peak_not_measured():
    result = perftest.parse(
        read('ib_write_bw_D60-16qp-cuda-a40-roce-server.out'))
    assert 'BW peak printed as 0' in result.details['note']
    assert result.details['rdma_cm'] == 'ON'
    assert result.details['side'] == 'server'


def test_all_sizes_table():
    result = perftest.parse(
        read('ib_write_bw_a-cuda-dmabuf-h200-roce-gbits.out'))
    rows = result.details['rows']
    assert rows[0] == {'#bytes': 2, '#iterations': 5000,
                       'BW peak[Gb/sec]': 0.057240,
                       'BW average[Gb/sec]': 0.056633,
                       'MsgRate[Mpps]': 3.539560}
    assert rows[-1]['#bytes'] == 8388608


# file -> min, typical, avg, p99, p99.9, max (µs), rows
LATENCY = {
    'ib_write_lat_a-mlx4-fdr.out': (0.88, 0.98, 1.03, 1.21, 5.42, 6.84, 23),
    'ib_write_lat_rdmacm-dgxspark.out':
        (1.42, 1.47, 1.47, 1.57, 1.93, 1.93, 1),
}


@pytest.mark.parametrize('name', sorted(LATENCY))
def test_latency_files(name):
    low, typical, average, p99, p999, high, rows = LATENCY[name]
    result = perftest.parse(read(name))
    assert result.ok, result.reason
    assert result.value('lat_min') == low
    assert result.value('lat_typical') == typical
    assert result.value('lat_avg') == average
    assert result.value('lat_p99') == p99
    assert result.value('lat_p999') == p999
    assert result.value('lat_max') == high
    assert result.metrics['lat_p99'].unit == 'us'
    assert result.details['kind'] == 'lat'
    assert result.details['msg_size'] == 2
    assert result.details['row_used'] == 'smallest message size'
    assert len(result.details['rows']) == rows


def test_latency_row_with_tabs_and_warnings():
    # The real rdma_cm sample with a CPU-frequency warning put between the
    # header and the row and tabs between the values, as newer perftest
    # prints them.
    text = read('ib_write_lat_rdmacm-dgxspark.out')
    row = (' 2       1000          1.42           1.93         1.47       '
           '         1.47             0.00            1.57                '
           '    1.93')
    assert row in text
    tabbed = ' 2       1000          1.42           1.93         1.47     \t' \
             '       1.47        \t0.00   \t\t1.57    \t\t1.93   '
    warning = ('Conflicting CPU frequency values detected: 3295.212000 != '
               '5023.444000. CPU Frequency is not max.\n')
    result = perftest.parse(text.replace(row, warning + tabbed))
    assert result.ok, result.reason
    assert (result.value('lat_typical'), result.value('lat_p99')) == \
        (1.47, 1.57)


@pytest.mark.parametrize('text', ['', '\n  \n'])
def test_empty(text):
    result = perftest.parse(text)
    assert not result.ok and result.reason == 'empty output'


def test_truncated_inside_the_table():
    lines = read('ib_write_bw_bidir-a-4qp_amd-ainic-400g-client.out')\
        .splitlines()
    result = perftest.parse('\n'.join(lines[:45]))
    assert not result.ok
    assert 'not closed' in result.reason


def test_truncated_before_the_table():
    lines = read('ib_write_bw_ndr-cx7-b2b-gbits.out').splitlines()
    result = perftest.parse('\n'.join(lines[:16]))
    assert not result.ok
    assert 'no result table' in result.reason


def test_client_that_could_not_connect():
    # perftest's own messages when the server is not listening
    text = ("Couldn't connect to 10.0.0.5:18515\n"
            'Unable to open file descriptor for socket connection '
            'Unable to init the socket connection\n')
    result = perftest.parse(text)
    assert not result.ok
    assert result.reason == \
        "perftest failed: Couldn't connect to 10.0.0.5:18515"


def test_two_runs_in_one_file():
    text = (read('ib_write_bw_ndr-cx7-b2b-gbits.out')
            + read('ib_read_bw_ndr-cx7-b2b-gbits.out'))
    result = perftest.parse(text)
    assert not result.ok
    assert '2 perftest runs' in result.reason


@pytest.mark.parametrize('path', [
    DATA.parent / 'nccl-tests' / 'foreign' /
    'osu_latency_v7.5_oci-x9-2node-single-size.out',
    DATA.parent / 'nccl-tests' / 'all_reduce_h100-a3mega-16gpu-2node.out',
])
def test_foreign_text(path):
    result = perftest.parse(path.read_text())
    assert not result.ok
    assert 'no perftest banner' in result.reason


def test_cli_parse_perftest():
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'scripts' / 'clusterproof'), 'parse',
         'perftest', str(DATA / 'ib_write_bw_ndr-cx7-b2b-gbits.out')],
        capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out['metrics']['bw_peak'] == {'value': 392.38, 'unit': 'Gb/s'}
    assert out['metrics']['bw_avg'] == {'value': 392.34, 'unit': 'Gb/s'}
