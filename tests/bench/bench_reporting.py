"""Benchmark: ReFrame's stock httpjson against the project's live push and
`clusterproof sync`, side by side, against the loopback Logs Ingestion API
with a latency added to every call (default 50 ms).

    .venv/bin/python -m tests.bench.bench_reporting [--latency 0.05]

Prints, for one real ReFrame session of TESTS x METRICS perf records per
handler: HTTP calls, main-loop time spent in perf logging per record
(every handler of a test, the local store's fsync included) and wall time;
then the time to ship SYNC_ROWS stored rows with `sync` against stock's one
POST per record (measured on a sample, scaled to SYNC_ROWS). Not collected
by pytest.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.helpers import REPO, suite_env
from tests.support.loopback_azure import FakeAzure, make_certificate
from tests.support.reporting_helpers import SYNTHETIC

BENCH = Path(__file__).resolve().parent


def start_fake(directory: Path, latency: float, **fields) -> FakeAzure:
    """A loopback Azure, its FakeAzure *fields* set before it starts."""
    fake = FakeAzure(**fields)
    fake.cert, fake.key = make_certificate(directory)
    fake.ca_bundle = str(fake.cert)
    fake.latency = latency
    fake.start()
    return fake


def calls(fake) -> int:
    return len(fake.uploads) + len(fake.rejected)


def run_session(name, config, fake, work: Path, tests, metrics, azure=True):
    home = work / name
    timing = work / f'{name}-timing.json'
    env = suite_env(home, {**(fake.env() if azure else {}),
                           'REQUESTS_CA_BUNDLE': fake.ca_bundle,
                           'SSL_CERT_FILE': fake.ca_bundle,
                           'CLUSTERPROOF_TEST_TESTS': str(tests),
                           'CLUSTERPROOF_TEST_METRICS': str(metrics),
                           'BENCH_TIMING_FILE': str(timing),
                           'CLUSTERPROOF_FLUSH_TIMEOUT': '120',
                           # stock_config.py imports the project's config
                           'PYTHONPATH': str(REPO)})
    before, rows_before = calls(fake), len(fake.rows)
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(BENCH / 'timed_reframe.py'), '-C', str(config),
         '--system', 'local', '-c', SYNTHETIC, '--prefix',
         str(work / f'{name}-rfm'), '-r'],
        env=env, cwd=str(REPO), capture_output=True, text=True)
    wall = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f'{name} session failed:\n{result.stdout[-3000:]}'
                 f'{result.stderr[-3000:]}')
    spent = json.loads(timing.read_text())
    return {'handler': name, 'records': spent['records'],
            'arrived': len(fake.rows) - rows_before,
            'calls': calls(fake) - before,
            'ms_per_record': 1000 * spent['seconds'] / spent['records'],
            'wall_s': wall}


def stored_backlog(home: Path, count: int):
    from config.results.rows import schema as row_schema
    from config.results.store import files as store
    session = store.SessionFile('20261130T000000Z-bench000', home / 'results')
    for index in range(count):
        session.append(row_schema.make_row({
            'record_id': f'bench-{index:07d}', 'check_name': 'Bench',
            'check_perf_var': 'metric', 'check_perf_value': float(index),
            'TimeGenerated': row_schema.now_iso(),
            'check_job_completion_time': row_schema.now_iso()}))
    return session


def time_sync(fake, work: Path, count: int):
    from config.results.azure import sync as backlog
    os.environ['CLUSTERPROOF_HOME'] = str(work / 'sync')
    stored_backlog(work / 'sync', count)
    found = backlog.find_backlog()
    before = calls(fake)
    start = time.monotonic()
    tally, stopped = backlog.ship(found.rows, found.ledger_of,
                                  backlog.default_transport())
    seconds = time.monotonic() - start
    assert stopped is None and tally.shipped == count, tally.left
    return seconds, calls(fake) - before


def time_stock_per_record(fake, sample: int):
    """ReFrame's own HTTPJSONHandler, one emit (one POST) per stored row."""
    from reframe.core.logging import HTTPJSONHandler
    from config.results.azure import ingestion
    from config.results.rows import schema as row_schema
    handler = HTTPJSONHandler(
        ingestion.ingestion_url(**ingestion.settings()),
        json_formatter=lambda record, extras, ignore: json.dumps(
            [record.row]),
        authorization_header=ingestion.bearer_header)
    rows = [row_schema.make_row({'record_id': f'stock-{i}'})
            for i in range(sample)]
    start = time.monotonic()
    for row in rows:
        record = logging.LogRecord('bench', logging.INFO, __file__, 0, '',
                                   None, None)
        record.row, record.check_tags = row, []
        handler.emit(record)
    return (time.monotonic() - start) / sample


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--latency', type=float, default=0.05)
    parser.add_argument('--tests', type=int, default=50)
    parser.add_argument('--metrics', type=int, default=20)
    parser.add_argument('--sync-rows', type=int, default=10_000)
    parser.add_argument('--stock-sample', type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        fake = start_fake(work, args.latency)
        os.environ.update(fake.env(), REQUESTS_CA_BUNDLE=fake.ca_bundle,
                          SSL_CERT_FILE=fake.ca_bundle)
        try:
            sessions = [
                run_session('stock', BENCH / 'stock_config.py', fake, work,
                            args.tests, args.metrics),
                run_session('live', REPO / 'config' / 'config.py', fake,
                            work, args.tests, args.metrics),
                # the same session with Log Analytics off: the local store
                # and ReFrame's own perflog alone
                run_session('no-azure', REPO / 'config' / 'config.py', fake,
                            work, args.tests, args.metrics, azure=False)]
            sync_s, sync_calls = time_sync(fake, work, args.sync_rows)
            stock_per_record = time_stock_per_record(fake,
                                                     args.stock_sample)
        finally:
            fake.close()
    print(f'latency added per call: {args.latency * 1000:.0f} ms; '
          f'session: {args.tests} tests x {args.metrics} perf variables')
    print(f'{"handler":8} {"records":>8} {"arrived":>8} {"calls":>6} '
          f'{"calls/1000":>10} {"ms/record":>10} {"wall s":>7}')
    for s in sessions:
        print(f'{s["handler"]:8} {s["records"]:8} {s["arrived"]:8} '
              f'{s["calls"]:6} {1000 * s["calls"] / s["records"]:10.1f} '
              f'{s["ms_per_record"]:10.2f} {s["wall_s"]:7.1f}')
    stock, live, local_only = sessions
    stock_sync = stock_per_record * args.sync_rows
    print(f'sync of {args.sync_rows} stored rows: {sync_s:.1f} s in '
          f'{sync_calls} calls ({1000 * sync_calls / args.sync_rows:.1f} '
          f'per 1000); stock one POST per record: '
          f'{stock_per_record * 1000:.1f} ms/record x {args.sync_rows} = '
          f'{stock_sync:.0f} s (measured on {args.stock_sample})')
    print('ratios: calls per record, stock/live: '
          f'{stock["calls"] / max(live["calls"], 1):.0f}x fewer; '
          f'main-loop ms per record, stock/live: '
          f'{stock["ms_per_record"] / live["ms_per_record"]:.0f}x less '
          f'(the live push itself: '
          f'{live["ms_per_record"] - local_only["ms_per_record"]:.2f} ms); '
          f'sync vs stock for {args.sync_rows} rows: '
          f'{stock_sync / sync_s:.0f}x faster')


if __name__ == '__main__':
    main()
