"""Benchmark: `clusterproof sync` of a backlog of ROWS realistic rows (the
fleet store's, tests/bench/fleet_store.py) against the loopback Logs
Ingestion API with a latency added to every call (default 50 ms), with 1
and with 3 uploads in flight (--uploads N...); the floor is calls x
latency / uploads.

    nice -n 5 .venv/bin/python -m tests.bench.bench_sync [--rows 100000]

Prints calls, rows the endpoint received (every distinct stored row must
arrive once), wall seconds, seconds until the first call was answered
(the command's fixed cost: Python, the Azure SDK's imports, the token, and
one latency), the ratio to the floor, the command's CPU seconds and per
call (the client's own cost: with the uploads in flight it bounds the wall
time once it exceeds latency / uploads), the loopback endpoint's CPU
seconds (this process: the benchmark's own share of the machine), peak RSS
(of sync and its reading process, added up),
the CPU the endpoint spent afterwards decoding what it held, and the
transport alone: the same bodies posted again by the same SDK client with
the same uploads in flight and nothing to read or ledger
(tests/bench/replay_bodies.py), the bound this endpoint and client set. The
endpoint decompresses every body as it comes and checks its size, keeps
connections open between calls (HTTP/1.1, as Azure does), and decodes
every body's JSON after the timed run (FakeAzure.hold_bodies).
Not collected by pytest.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from config.results.store import files as store
from tests.bench import fleet_store
from tests.bench.bench_queries import (CLI, compiled_as_set_up, load_line,
                                       run_one)
from tests.bench.bench_reporting import calls, start_fake
from tests.support.helpers import REPO, suite_env


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--rows', type=int, default=100_000)
    parser.add_argument('--latency', type=float, default=0.05)
    parser.add_argument('--uploads', type=int, nargs='+', default=[1, 3])
    args = parser.parse_args(argv)
    compiled_as_set_up()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        fake = start_fake(work, args.latency, hold_bodies=True,
                          keep_alive=True)
        try:
            pristine = work / 'pristine'
            lines = fleet_store.build(pristine, args.rows, days=7)
            distinct = {row['record_id'] for row in
                        store.iter_rows(pristine / 'results')}
            print(f'backlog: {lines} stored lines ({len(distinct)} '
                  f'distinct rows) in 35 session files; '
                  f'{args.latency * 1000:.0f} ms per call')
            print(load_line('before'))
            print(f'{"uploads":>7} {"calls":>6} {"rows":>7} {"wall s":>7} '
                  f'{"1st call s":>10} '
                  f'{"floor s":>8} {"x floor":>8} {"CPU s":>6} '
                  f'{"ms/call":>7} {"endpoint CPU s":>14} {"peak MiB":>9} '
                  f'{"JSON decoded after, CPU s":>25} '
                  f'{"transport alone s":>17} {"x floor":>9}')
            for uploads in args.uploads:
                home = work / f'home-{uploads}-{len(list(work.glob("home-*")))}'
                shutil.copytree(pristine, home)
                env = suite_env(home, {**fake.env(),
                                       'REQUESTS_CA_BUNDLE': fake.ca_bundle,
                                       'SSL_CERT_FILE': fake.ca_bundle})
                before = calls(fake)
                served, started = time.process_time(), time.monotonic()
                wall, cpu, rss, _ = run_one(
                    [sys.executable, CLI, 'sync', '--uploads', str(uploads)],
                    env)
                made = calls(fake) - before
                served = time.process_time() - served
                first = min(when for _, _, when in fake.held) - started
                sent = work / f'bodies-{uploads}'
                shutil.rmtree(sent, ignore_errors=True)
                sent.mkdir()
                for number, (body, gzipped, _) in enumerate(fake.held):
                    (sent / f'{number:06d}.{"gz" if gzipped else "json"}'
                     ).write_bytes(body)
                decoded = time.process_time()
                arrived = [row['record_id'] for row in fake.held_rows()]
                decoded = time.process_time() - decoded
                received = len(arrived)
                if received != len(distinct) or set(arrived) != distinct:
                    sys.exit(f'{received} rows arrived, not the '
                             f'{len(distinct)} stored')
                floor = made * args.latency / uploads
                alone = transport_alone(sent, uploads, env)
                fake.held.clear()
                print(f'{uploads:7} {made:6} {received:7} {wall:7.2f} '
                      f'{first:10.2f} '
                      f'{floor:8.2f} {wall / floor:8.2f} {cpu:6.2f} '
                      f'{1000 * cpu / made:7.1f} '
                      f'{served:14.2f} {rss / 2**20:9.0f} {decoded:25.2f} '
                      f'{alone:17.2f} {alone / floor:9.2f}')
            print(load_line('after'))
        finally:
            fake.close()


def transport_alone(bodies: Path, uploads: int, env: dict) -> float:
    """Seconds the same SDK client takes to post the same bodies with the
    same uploads in flight and nothing else to do (replay_bodies)."""
    replay = subprocess.run(
        [sys.executable, '-m', 'tests.bench.replay_bodies', str(bodies),
         str(uploads)], env=env, cwd=str(REPO), capture_output=True,
        text=True)
    if replay.returncode != 0:
        sys.exit(f'replaying the bodies failed: {replay.stdout[-300:]}'
                 f'{replay.stderr[-2000:]}')
    return json.loads(replay.stdout)['seconds']


if __name__ == '__main__':
    main()
