"""Benchmark: `clusterproof query` and `report` on a realistic fleet store
(tests/bench/fleet_store.py) against the limit measured in the same run:
plain DuckDB reading the same JSON lines, deduplicating with row_number()
and computing trends' daily median, minimum and maximum (the faster of two
runs: the first may read the JSON from disk).

    nice -n 10 .venv/bin/python -m tests.bench.bench_queries [--rows 1000000]
        [--home DIR]   # reuse a store built before (else a temporary one)
        [--only LABEL ...]   # the commands whose label contains LABEL

Prints, per command, cold (nothing in $CLUSTERPROOF_HOME/cache: the
command builds the index from every JSON line; the shipped queries'
translations are set up beside .venv, as scripts/setup.sh leaves them) and
then warm (the same command again, over the index): wall and CPU seconds
(on a shared machine the CPU time is the steadier figure), their ratios to
the limit, peak RSS (of the command and the processes it starts), and what
it printed (for the report, the file's size). Then `query trends` after one
new session (its ingest included), and while another command holds the
index's lock (every JSON line read at query time). Not collected by pytest;
run by hand (a 1M-row store is 1.3 GB).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import fcntl

from scripts.query import index
from tests.bench import fleet_store
from tests.support.helpers import REPO, suite_env

CLI = str(REPO / 'scripts' / 'clusterproof')
LIMIT = """
import sys, duckdb
files = sorted(sys.argv[1:])
con = duckdb.connect()
con.execute("SET TimeZone='UTC'")
con.execute(f'''
    WITH raw AS (SELECT * FROM read_json({files!r},
                 format='newline_delimited')),
    once AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY
             record_id ORDER BY TimeGenerated DESC) AS copy FROM raw)
             WHERE copy = 1)
    SELECT date_trunc('day', coalesce(check_job_completion_time,
           TimeGenerated)) AS day, cluster, vm_sku, check_name,
           check_perf_var, device, check_perf_unit,
           median(check_perf_value), min(check_perf_value),
           max(check_perf_value)
    FROM once WHERE check_perf_value IS NOT NULL
    GROUP BY ALL''').fetchall()
"""
COMMANDS = [
    ('query trends', ['query', 'trends']),
    ('query trends --since 7d', ['query', 'trends', '--since', '7d']),
    ('query regressions', ['query', 'regressions']),
    ('query latest_by_node', ['query', 'latest_by_node']),
    ('query run_summary', ['query', 'run_summary']),
    ('query node_outliers', ['query', 'node_outliers']),
    ('query node_outliers --all', ['query', 'node_outliers', '--all']),
    ('query node_outliers --all --csv',
     ['query', 'node_outliers', '--all', '--csv']),
    ('query failures', ['query', 'failures']),
    ('report --out', ['report', '--out', '{out}']),
]


def _peak_after_exec(pid: int, peak: list) -> None:
    """The VmHWM (peak RSS of the program it runs) of the process and of
    each process it starts (sync's reading process), added up, polled until
    it ends: an upper bound, as pages a fork shares count twice. Not
    ru_maxrss: that counts the parent's pages the child had between fork
    and exec (a benchmark holding a fake server's rows)."""
    peaks = {}
    while True:
        try:
            for each in [pid, *_descendants(pid)]:
                peaks[each] = max(peaks.get(each, 0), _high_water(each))
        except (OSError, ValueError):
            if each == pid:
                return
        peak[0] = sum(peaks.values())
        time.sleep(0.02)


def _high_water(pid: int) -> int:
    with open(f'/proc/{pid}/status') as fp:
        for line in fp:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) * 1024
    return 0


def _descendants(pid: int) -> list[int]:
    found = []
    try:
        tasks = os.listdir(f'/proc/{pid}/task')
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f'/proc/{pid}/task/{task}/children') as fp:
                children = [int(child) for child in fp.read().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *_descendants(child)]
    return found


class Failed(Exception):
    """A measured command that exited non-zero; the message is its
    stderr's last line."""


def run_one(argv: list[str], env: dict) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, peak RSS bytes, stdout bytes), reaped
    with wait4 so that the CPU time is this process's alone; Failed when
    the command fails."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        child = subprocess.Popen(argv, env=env, stdout=out, stderr=err,
                                 cwd=str(REPO))
        peak = [0]
        watch = threading.Thread(target=_peak_after_exec,
                                 args=(child.pid, peak), daemon=True)
        watch.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            lines = err.read().decode().strip().splitlines() or ['']
            raise Failed(f'{" ".join(argv[2:])} failed: {lines[0][:300]}')
        return (wall, usage.ru_utime + usage.ru_stime, peak[0], out.tell())


def load_line(when: str) -> str:
    """The machine's load average (1, 5, 15 min): how shared it was."""
    return (f'load average {when}: '
            + ' '.join(f'{value:.2f}' for value in os.getloadavg()))


def compiled_as_set_up() -> None:
    """The checkout's modules compiled and the shipped queries translated,
    as scripts/setup.sh leaves them: the commands timed do not compile
    what was edited since (where Python does not write __pycache__ itself,
    PYTHONDONTWRITEBYTECODE), nor translate a query edited since."""
    for step in (['-m', 'compileall', '-q', 'scripts', 'config', 'checks'],
                 ['-m', 'scripts.query.translate_shipped']):
        subprocess.run([sys.executable, *step], cwd=str(REPO), check=True,
                       stdout=subprocess.DEVNULL)


def _beside_the_index(home: Path, env: dict, limit: float,
                      limit_cpu: float) -> None:
    """`query trends` warm, after one new session (a copy of the last one
    under new record_ids, settled), and with the index's lock held."""
    trends = [sys.executable, CLI, 'query', 'trends']

    def line(label, figures):
        wall, cpu, rss, _ = figures
        print(f'{label:44} {wall:7.2f} {wall / limit:8.2f} {cpu:7.2f} '
              f'{cpu / limit_cpu:8.2f} {rss / 2**20:9.0f}', flush=True)
    line('query trends (warm)', run_one(trends, env))
    last = sorted((home / 'results').glob('*/*.jsonl'))[-1]
    new = last.with_name('zz-' + last.name)
    new.write_text(last.read_text().replace('"record_id":"',
                                            '"record_id":"new-'))
    settled = time.time() - 2 * index.SETTLED_SECONDS
    os.utime(new, (settled, settled))
    try:
        line('query trends, one new session ingested', run_one(trends, env))
        line('query trends (warm again)', run_one(trends, env))
        where = index.folder(home / 'results')
        with open(where / index.LOCK, 'a') as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            line('query trends, index locked: JSON lines', run_one(
                trends, {**env, index.WAIT_VARIABLE: '0'}))
    finally:
        new.unlink()


def main(argv=None):
    compiled_as_set_up()
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--rows', type=int, default=1_000_000)
    parser.add_argument('--home', type=Path, default=None)
    parser.add_argument('--only', nargs='*', default=[])
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix='bench-queries-')
    try:
        home = args.home or Path(scratch) / 'home'
        if not (home / 'results').exists():
            start = time.monotonic()
            lines = fleet_store.build(home, args.rows)
            print(f'store: {lines} lines, {time.monotonic() - start:.0f} s '
                  'to write')
        files = sorted(str(p) for p in (home / 'results').glob('*/*.jsonl'))
        size = sum(os.path.getsize(f) for f in files)
        print(f'store: {len(files)} session files, {size / 2**20:.0f} MiB '
              f'of JSON lines under {home}')
        env = suite_env(home)
        env.pop('LOGS_WORKSPACE_ID', None)
        print(load_line('before'))
        shutil.rmtree(home / 'cache', ignore_errors=True)
        # twice, the faster kept: the first may read the JSON from disk,
        # where every later command finds it in the page cache
        limit, limit_cpu, limit_rss, _ = min(run_one(
            [sys.executable, '-c', LIMIT, *files], env) for _ in range(2))
        print(f'limit (plain DuckDB, row_number, daily median/min/max; the '
              f'faster of two runs): {limit:.2f} s wall, {limit_cpu:.2f} s '
              f'CPU, {limit_rss / 2**20:.0f} MiB')
        out = Path(scratch) / 'report.html'
        print(f'{"":28} {"cold":-^46} {"warm":-^46}')
        columns = (f' {"wall s":>7} {"x limit":>8} {"CPU s":>7} '
                   f'{"x limit":>8} {"peak MiB":>9}')
        print(f'{"command":28}{columns * 2} {"output":>10}')
        for label, words in COMMANDS:
            if args.only and not any(o in label for o in args.only):
                continue
            words = [w.format(out=out) for w in words]
            figures = []
            try:
                shutil.rmtree(home / 'cache', ignore_errors=True)
                for _ in ('cold', 'warm'):
                    wall, cpu, rss, printed = run_one(
                        [sys.executable, CLI, *words], env)
                    figures.append(f' {wall:7.2f} {wall / limit:8.2f} '
                                   f'{cpu:7.2f} {cpu / limit_cpu:8.2f} '
                                   f'{rss / 2**20:9.0f}')
            except Failed as err:
                print(f'{label:28} {err}')
                continue
            shown = (f'{out.stat().st_size / 1e6:.1f} MB' if 'report' in label
                     else f'{printed / 1e6:.2f} MB')
            print(f'{label:28}{"".join(figures)} {shown:>10}', flush=True)
        _beside_the_index(home, env, limit, limit_cpu)
        print(load_line('after'))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == '__main__':
    main()
