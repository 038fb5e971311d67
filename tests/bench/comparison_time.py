"""How long acceptance's after-run judging takes for a large run.

    .venv/bin/python tests/bench/comparison_time.py [--nodes 1000] [--metrics 50]

Builds the rows of one acceptance run (every node, every metric; a few slow
nodes), then times what acceptance does with them after the ReFrame
sessions: each node against its peers (scripts/comparison/peers.py), against a
site baseline of every key (scripts/comparison/baseline.py), the failing
findings, the common-mode pass and the verdict rows. Goal: under 5 s for
1,000 nodes x 50 metrics. Not collected by pytest (no test_ prefix);
tests/query/test_comparison_peers.py bounds the time on a smaller run.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

from scripts.acceptance import compare  # noqa: E402
from scripts.comparison import baseline, peers  # noqa: E402


def run_rows(nodes: int, metrics: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    slow = set(rng.sample(range(nodes), max(1, nodes // 100)))
    rows = []
    for m in range(metrics):
        # primary metrics (scripts/comparison/metrics.py) judge: STREAM triad
        # and OSU latency, one device each so every m is a group of its own
        unit = 'us' if m % 5 == 0 else 'MB/s'
        test = 'OsuPointToPoint' if unit == 'us' else 'StreamCheck'
        for n in range(nodes):
            value = rng.gauss(1000.0, 10.0)
            if n in slow:
                value *= 1.3 if unit == 'us' else 0.7
            rows.append({
                'record_id': f'r-{m}-{n}', 'session_id': 's-1',
                'facility': 'reframe', 'cluster': 'bench',
                'check_system': 'azure', 'check_partition': 'hbv4',
                'vm_sku': 'Standard_HB176rs_v4',
                'check_name': test,
                'check_display_name': f'{test} %.pinned_nodes=n{n}',
                'check_perf_var': 'latency' if unit == 'us' else 'triad_bw',
                'device': f'dev{m}', 'check_perf_value': value,
                'check_perf_unit': unit, 'check_perf_result': 'no_reference',
                'check_result': 'pass', 'check_jobid': str(m * nodes + n),
                'check_job_nodelist': [f'n{n}'],
                'check_params': {'array_size': 400000000, 'num_threads': 176},
                'TimeGenerated': '2026-12-01T02:00:00+00:00'})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--nodes', type=int, default=1000)
    parser.add_argument('--metrics', type=int, default=50)
    args = parser.parse_args()
    rows = run_rows(args.nodes, args.metrics)
    layer = baseline.Layer({e.id: e for e in baseline.build(
        rows, 'bench', min_runs=1)})
    start = time.perf_counter()
    decided = compare.peer_judgements(rows, peers.Rules()) + \
        compare.baseline_judgements(rows, layer)
    peers_done = time.perf_counter()
    findings = compare.failing_findings(decided, [])
    findings += compare.shared_failures(findings)
    verdict_rows = compare.verdict_rows(decided, 'bench-session')
    done = time.perf_counter()
    failing = {f.node for f in findings if f.basis == 'peers'}
    print(f'{args.nodes} nodes x {args.metrics} metrics = {len(rows)} rows')
    print(f'peers + site baseline judged in {peers_done - start:.2f} s')
    print(f'findings, common mode and {len(verdict_rows)} verdict rows in '
          f'{done - peers_done:.2f} s')
    print(f'total {done - start:.2f} s (goal < 5 s); '
          f'{len(failing)} node(s) fail against their peers')
    return 0 if done - start < 5 else 1


if __name__ == '__main__':
    sys.exit(main())
