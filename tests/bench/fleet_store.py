"""A realistic fleet store for the scale benchmarks: DAYS days of one
acceptance session per cluster per day (5 clusters, 4 VM SKUs, 200 nodes:
450 session files for 90 days), the checks' real names, perf variables,
units and devices, written the way ReFrame sessions write the store
(``results/YYYY-MM-DD/<session>.jsonl``, every schema column, one JSON line
per row; each file's modification time is its session's last row, as on a
real login node).

    .venv/bin/python -m tests.bench.fleet_store HOME [--rows 1000000]

Values are deterministic noise around each SKU's reference; one node per
cluster reads 15% low on STREAM every tenth day (an outlier and a failure),
and a share of the rows is stored twice (at-least-once delivery).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
from pathlib import Path

from config.results.rows import schema as row_schema

HCAS = [f'mlx5_ib{i}' for i in range(8)]

# (test class, display parameters, perf variable, unit, reference, devices)
CPU_CHECKS = [
    ('StreamCheck', '', 'copy_bw', 'MB/s', 650000.0, ['']),
    ('StreamCheck', '', 'scale_bw', 'MB/s', 640000.0, ['']),
    ('StreamCheck', '', 'add_bw', 'MB/s', 700000.0, ['']),
    ('StreamCheck', '', 'triad_bw', 'MB/s', 700000.0, ['']),
    ('HplCheck', '', 'gflops', 'Gflop/s', 7000.0, ['']),
    ('HpcgCheck', '', 'gflops', 'Gflop/s', 250.0, ['']),
    ('OsuPointToPoint', ' %benchmark=osu_latency', 'latency', 'us', 1.7,
     ['']),
    ('OsuPointToPoint', ' %benchmark=osu_bw', 'bandwidth', 'MB/s', 24000.0,
     ['']),
    ('OsuPointToPoint', ' %benchmark=osu_bibw', 'bandwidth', 'MB/s',
     48000.0, ['']),
    ('PerftestLoopback', ' %test=ib_write_bw', 'bw_peak', 'Gb/s', 395.0,
     HCAS[:1]),
    ('PerftestLoopback', ' %test=ib_write_bw', 'bw_avg', 'Gb/s', 390.0,
     HCAS[:1]),
    ('PerftestLoopback', ' %test=ib_write_lat', 'lat_typical', 'us', 1.1,
     HCAS[:1]),
    ('IorCheck', ' %api=POSIX', 'write_bandwidth_mib', 'MiB/s', 4500.0,
     ['']),
    ('IorCheck', ' %api=POSIX', 'read_bandwidth_mib', 'MiB/s', 5200.0,
     ['']),
]
GPU_CHECKS = [
    ('PerftestLoopback', ' %test=ib_write_bw', 'bw_avg', 'Gb/s', 390.0,
     HCAS),
    ('PerftestLoopback', ' %test=ib_write_bw', 'bw_peak', 'Gb/s', 395.0,
     HCAS),
    ('PerftestLoopback', ' %test=ib_write_lat', 'lat_typical', 'us', 1.1,
     HCAS),
    ('NcclSingleNode', ' %collective=all_reduce', 'avg_busbw', 'GB/s',
     480.0, ['']),
    ('NcclSingleNode', ' %collective=all_reduce', 'busbw', 'GB/s', 490.0,
     ['']),
    ('StreamCheck', '', 'triad_bw', 'MB/s', 300000.0, ['']),
]
CLUSTERS = [  # (cluster, partition, VM SKU, checks)
    ('prod-eastus', 'hbv4', 'Standard_HB176rs_v4', CPU_CHECKS),
    ('prod-westeu', 'hbv4', 'Standard_HB176rs_v4', CPU_CHECKS),
    ('cfd-southcentral', 'hbv5', 'Standard_HB368rs_v5', CPU_CHECKS),
    ('ai-eastus', 'ndv5', 'Standard_ND96isr_H100_v5', GPU_CHECKS),
    ('ai-swedencentral', 'ndh200', 'Standard_ND96isr_H200_v5', GPU_CHECKS),
]
NODES_PER_CLUSTER = 40
DUPLICATED_SHARE = 0.001


def _base(cluster, partition, sku) -> dict:
    return {'facility': 'reframe', 'data_version': row_schema.DATA_VERSION,
            'cluster': cluster, 'check_system': 'azure',
            'check_partition': partition, 'check_environ': 'builtin',
            'vm_sku': sku, 'hostname': 'login-1', 'osuser': 'hpcadmin',
            'reframe_version': '4.10.4', 'check_tags': ['acceptance'],
            'reference_source': 'Azure HPC benchmarks page',
            'verdict_basis': 'published'}


def session_rows(day: int, cluster_index: int, target: int,
                 rand: random.Random, start: dt.datetime) -> list[dict]:
    """One session's rows: every node runs every check of its SKU, in
    repeated rounds (a size parameter) until *target* rows."""
    cluster, partition, sku, checks = CLUSTERS[cluster_index]
    session = f'{start:%Y%m%dT%H%M%SZ}-{cluster_index:08x}'
    nodes = [f'{partition}-{cluster_index}-{n:03d}'
             for n in range(NODES_PER_CLUSTER)]
    bad = nodes[day % NODES_PER_CLUSTER] if day % 10 == 0 else None
    base = _base(cluster, partition, sku)
    rows, job = [], 0
    size = 0
    while len(rows) < target:
        for index, node in enumerate(nodes):
            for test, params, var, unit, ref, devices in checks:
                job += 1
                when = start + dt.timedelta(seconds=3 * len(rows))
                stamp = when.isoformat()
                for device in devices:
                    lower = unit in ('us', 's')
                    value = ref * (1 + rand.gauss(0.02, 0.01) *
                                   (-1 if lower else 1))
                    failed = node == bad and test == 'StreamCheck'
                    if failed:
                        value *= 0.85
                    extra = f' %size={size}' if size else ''
                    rows.append(row_schema.make_row({
                        **base, 'TimeGenerated': stamp,
                        'check_job_completion_time': stamp,
                        'record_id': f'{session}-{len(rows):07d}',
                        'session_id': session,
                        'check_name': f'{test}_{index}',
                        'check_display_name':
                            f"{test}{params}{extra} %.part=azure:{partition}"
                            f" %.nid=['{node}']",
                        'check_hashcode': f'{job:08x}',
                        'check_perf_var': var, 'device': device or None,
                        'check_perf_value': round(value, 3),
                        'check_perf_unit': unit, 'check_perf_ref': ref,
                        'check_perf_lower_thres': -0.1,
                        'check_perf_upper_thres': None,
                        'check_perf_result': 'fail' if failed else 'pass',
                        'check_result': 'fail' if failed else 'pass',
                        'check_fail_reason':
                            f'{var} below reference' if failed else None,
                        'check_jobid': str(100000 + job),
                        'check_job_nodelist': [node],
                        'check_num_tasks': 1}))
                    if len(rows) >= target:
                        return rows
        size += 1
    return rows


def build(home: Path, rows: int, days: int = 90,
          now: dt.datetime | None = None) -> int:
    """Writes the store under *home*/results; returns the lines written."""
    now = now or dt.datetime.now(dt.timezone.utc)
    rand = random.Random(22)
    sessions = days * len(CLUSTERS)
    per_session = max(1, rows // sessions)
    written = 0
    for day in range(days):
        for cluster_index in range(len(CLUSTERS)):
            start = (now - dt.timedelta(days=days - day, hours=-cluster_index)
                     ).replace(microsecond=0)
            found = session_rows(day, cluster_index, per_session, rand, start)
            path = (home / 'results' / f'{start:%Y-%m-%d}' /
                    f'{found[0]["session_id"]}.jsonl')
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = [json.dumps(row, separators=(',', ':')) for row in found]
            lines += [lines[i] for i in range(len(lines))
                      if rand.random() < DUPLICATED_SHARE]
            path.write_text(''.join(line + '\n' for line in lines))
            last = dt.datetime.fromisoformat(found[-1]['TimeGenerated'])
            os.utime(path, (last.timestamp(), last.timestamp()))
            written += len(lines)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('home', type=Path)
    parser.add_argument('--rows', type=int, default=1_000_000)
    parser.add_argument('--days', type=int, default=90)
    args = parser.parse_args(argv)
    lines = build(args.home, args.rows, args.days)
    print(f'{lines} lines in {args.days * len(CLUSTERS)} session files '
          f'under {args.home}/results')


if __name__ == '__main__':
    main()
