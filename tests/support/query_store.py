"""A small, realistic local store for the query and report tests: two
clusters of two SKUs over a week, written the way ReFrame sessions write
it (one file per session under results/YYYY-MM-DD/).

What it holds, so that every shipped query has something to find:
- prod-eastus (HBv4, partition hbv4, nodes hb-1..hb-5): STREAM triad on
  every node every day (reference 700000 MB/s, -10%); on the last day hb-3
  reads 560000 MB/s and fails: the bad node. OSU latency (µs, no published
  reference) between hb-1 and hb-2, 1.7 µs until the last day's 2.4 µs: a
  regression against the trailing baseline only. An IOR run two days ago
  failed its write bandwidth reference: the failed test.
- prod-westeu (ND H100 v5, partition ndv5, nodes nd-1..nd-3): perftest
  loopback bw_avg per HCA (Gb/s, reference 390, line rate 400 Gb/s) on each
  node, and NCCL all_reduce avg_busbw (GB/s, reference 480); the latest
  acceptance run could not measure NCCL on nd-3 (not_measured).
- One STREAM row stored twice (same record_id): counted once.
- Every row carries its node's fingerprint (fingerprint()): one kernel, image,
  OFED and firmware per SKU, until the last day, when hb-3 (the bad node)
  runs a newer kernel than its peers.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from config.results.rows import schema as row_schema

NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
DAYS = 7
HB_SKU = 'Standard_HB176rs_v4'
ND_SKU = 'Standard_ND96isr_H100_v5'
HB_NODES = ['hb-1', 'hb-2', 'hb-3', 'hb-4', 'hb-5']
ND_NODES = ['nd-1', 'nd-2', 'nd-3']
HCAS = ['mlx5_ib0', 'mlx5_ib1']
DUPLICATED = 'stream-0-hb-2'


def _row(session: str, when: dt.datetime, **values) -> dict:
    stamp = when.isoformat()
    base = {
        'TimeGenerated': stamp, 'check_job_completion_time': stamp,
        'session_id': session, 'facility': 'reframe',
        'data_version': row_schema.DATA_VERSION, 'check_environ': 'builtin',
        'check_result': 'pass', 'hostname': 'login-1', 'osuser': 'hpcadmin',
        'reframe_version': '4.10.4', 'check_tags': ['acceptance'],
    }
    return row_schema.make_row({**base, **values})


def _eastus(day: int, when: dt.datetime, session: str,
            days: int = DAYS) -> list[dict]:
    last = day == days - 1
    common = {'cluster': 'prod-eastus', 'check_system': 'azure',
              'check_partition': 'hbv4', 'vm_sku': HB_SKU}
    rows = []
    for index, node in enumerate(HB_NODES):
        value = 700000.0 + 4000.0 * index + 1000.0 * day
        bad = last and node == 'hb-3'
        if bad:
            value = 560000.0
        rows.append(_row(
            session, when + dt.timedelta(minutes=index), **common,
            record_id=f'stream-{day}-{node}',
            check_name=f'StreamCheck_{index}',
            check_display_name=f"StreamCheck %.part=azure:hbv4 %.nid=['{node}']",
            check_perf_var='triad_bw', check_perf_value=value,
            check_perf_unit='MB/s', check_perf_ref=700000.0,
            check_perf_lower_thres=-0.1, check_perf_upper_thres=None,
            check_perf_peak=921600.0,
            peak_source='24 DDR5 channels x 4800 MT/s x 8 B',
            reference_source='Azure HBv4 STREAM (HPC benchmarks page)',
            check_perf_result='fail' if bad else 'pass',
            check_result='fail' if bad else 'pass',
            check_fail_reason='triad_bw 560000 MB/s below 630000 MB/s '
                              '(reference 700000 -10%)' if bad else None,
            check_jobid=f'{100 + 10 * day + index}',
            check_job_nodelist=[node], check_num_tasks=1))
    latency = 2.4 if last else 1.7 + 0.01 * day
    rows.append(_row(
        session, when + dt.timedelta(minutes=10), **common,
        record_id=f'osu-{day}', check_name='OsuPointToPoint_1',
        check_display_name='OsuPointToPoint %benchmark=osu_latency',
        check_perf_var='latency', check_perf_value=latency,
        check_perf_unit='us', check_perf_ref=0.0,
        check_perf_result='no_reference',
        check_jobid=f'{105 + 10 * day}',
        check_job_nodelist=['hb-1', 'hb-2'], check_num_tasks=2))
    if day == days - 3:
        rows.append(_row(
            session, when + dt.timedelta(minutes=20), **common,
            record_id='ior-failed', check_name='IorCheck_1',
            check_display_name='IorCheck %api=POSIX',
            check_perf_var='write_bandwidth_mib', check_perf_value=3100.0,
            check_perf_unit='MiB/s', check_perf_ref=4500.0,
            check_perf_lower_thres=-0.2, check_perf_result='fail',
            check_result='fail',
            check_fail_reason='write_bandwidth_mib 3100 MiB/s below '
                              '3600 MiB/s (reference 4500 -20%)',
            reference_source='site measurement',
            check_jobid='ior-77', check_job_nodelist=['hb-1', 'hb-2'],
            check_num_tasks=8))
    return rows


def _westeu(day: int, when: dt.datetime, session: str,
            days: int = DAYS) -> list[dict]:
    last = day == days - 1
    common = {'cluster': 'prod-westeu', 'check_system': 'azure',
              'check_partition': 'ndv5', 'vm_sku': ND_SKU}
    rows = []
    if day >= days - 2:
        for index, node in enumerate(ND_NODES):
            for hca_index, hca in enumerate(HCAS):
                rows.append(_row(
                    session, when + dt.timedelta(minutes=index), **common,
                    record_id=f'perftest-{day}-{node}-{hca}',
                    check_name=f'PerftestLoopback_{index}',
                    check_display_name='PerftestLoopback %test=ib_write_bw '
                                       f"%.part=azure:ndv5 %.nid=['{node}']",
                    check_perf_var='bw_avg', device=hca,
                    check_perf_value=385.0 + index + 2.0 * hca_index,
                    check_perf_unit='Gb/s', check_perf_ref=390.0,
                    check_perf_lower_thres=-0.05, check_perf_result='pass',
                    check_perf_peak=400.0, peak_source='NDR 400 Gb/s',
                    reference_source='Azure HPC health checks',
                    check_jobid=f'pt-{day}-{index}',
                    check_job_nodelist=[node], check_num_tasks=1))
    for index, node in enumerate(ND_NODES):
        missing = last and node == 'nd-3'
        rows.append(_row(
            session, when + dt.timedelta(minutes=30 + index), **common,
            record_id=f'nccl-{day}-{node}', check_name=f'NcclSingleNode_{index}',
            check_display_name='NcclSingleNode %collective=all_reduce '
                               f"%.part=azure:ndv5 %.nid=['{node}']",
            check_perf_var='avg_busbw',
            check_perf_value=None if missing else 478.0 + index + day,
            check_perf_unit='GB/s', check_perf_ref=480.0,
            check_perf_lower_thres=-0.05,
            check_perf_result='not_measured' if missing else 'pass',
            check_result='fail' if missing else 'pass',
            check_fail_reason='all_reduce_perf not found on nd-3'
            if missing else None,
            reference_source='Azure ND H100 v5 NCCL all_reduce',
            check_jobid=f'nccl-{day}-{index}',
            check_job_nodelist=[node], check_num_tasks=8))
    return rows


KERNEL, NEW_KERNEL = '5.15.0-1053-azure', '5.15.0-1061-azure'
GPU_DRIVER, NEW_GPU_DRIVER = '535.154.05', '550.54.15'


def fingerprint(node: str, newer_kernel: bool = False,
                gpu_driver: str = GPU_DRIVER) -> dict:
    """The fingerprint columns of one node (ND nodes have GPUs)."""
    gpu = node.startswith('nd-')
    return {
        'kernel_version': NEW_KERNEL if newer_kernel else KERNEL,
        'os_image': '22.04.2024102301',
        'gpu_driver_version': gpu_driver if gpu else None,
        'cuda_version': '12.2' if gpu else None,
        'nccl_version': '2.21.5+cuda12.4' if gpu else None,
        'mpi_version': 'hpcx-v2.20-gcc-mlnx_ofed-ubuntu22.04-cuda12-x86_64',
        'ofed_version': 'MLNX_OFED_LINUX-24.04-0.7.0.0',
        'hca_firmware': '28.39.2048',
        'gpu_vbios': '96.00.89.00.01' if gpu else None,
        'physical_host': f'GN4-21-{10 + int(node.split("-")[1])}',
    }


def _with_fingerprint(row: dict, day: int, days: int) -> dict:
    nodes = row['check_job_nodelist']
    if len(nodes) != 1:
        return row
    newer = day == days - 1 and nodes[0] == 'hb-3'
    return {**row, **fingerprint(nodes[0], newer_kernel=newer)}


def build(home: Path, now: dt.datetime = NOW, days: int = DAYS) -> list[dict]:
    """Write the store under *home*/results, its last runs ten hours before
    *now*, one run a day for *days* days; return the distinct rows."""
    written = []
    for day in range(days):
        when = now - dt.timedelta(days=days - 1 - day, hours=10)
        for cluster, rows_of in (('eastus', _eastus), ('westeu', _westeu)):
            session = f'{when:%Y%m%dT%H%M%SZ}-{cluster}'
            rows = [_with_fingerprint(row, day, days)
                    for row in rows_of(day, when, session, days)]
            path = home / 'results' / f'{when:%Y-%m-%d}' / f'{session}.jsonl'
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = [json.dumps(row) for row in rows]
            lines += [json.dumps(row) for row in rows
                      if row['record_id'] == DUPLICATED]
            path.write_text(''.join(line + '\n' for line in lines))
            written.extend(rows)
    return written


def settle(home: Path) -> None:
    """Each session file's modification time its last row's, as ReFrame
    leaves them (long before now: the index holds them)."""
    for path in (home / 'results').glob('*/*.jsonl'):
        last = max(json.loads(line)['TimeGenerated']
                   for line in path.read_text().splitlines())
        stamp = dt.datetime.fromisoformat(last).timestamp()
        os.utime(path, (stamp, stamp))
