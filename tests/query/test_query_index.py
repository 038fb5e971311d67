"""The store's index (scripts/query/index.py): one DuckDB file fed from the
settled session files, each record once; what users see of it: the rows,
the latest copy of a record kept, damaged lines counted and their files
named without reading them again, the index built again when the store
loses a file or the index is deleted, and the answers of a query while
another command writes or reads the index."""
import datetime as dt
import fcntl
import json
import os
import subprocess
import sys
import time

import duckdb
import pytest

from scripts.query import index, json_lines, library, local
from scripts.query.runner import Runner
from tests.support import query_store
from tests.support.helpers import REPO
from tests.support.query_envs import local_env

COUNT = library.Query('count', '', 'clusterproof_results | summarize rows = '
                      'count(), ids = dcount(record_id), total = '
                      'round(sum(check_perf_value), 3)\n')


@pytest.fixture
def home(tmp_path):
    query_store.build(tmp_path)
    query_store.settle(tmp_path)
    return tmp_path


def counted(home, **env) -> tuple:
    runner = Runner(results_dir=home / 'results', now=query_store.NOW)
    try:
        return tuple(runner.run(COUNT).rows[0]), runner.notes()
    finally:
        runner.close()


def ingested(home) -> dict:
    path = index.folder(home / 'results') / index.NAME
    with duckdb.connect(str(path), read_only=True) as con:
        return dict(con.execute('SELECT file, unreadable FROM ingested'
                                ).fetchall())


def settled_copy(home, name: str, rows: list[dict]) -> str:
    path = home / 'results' / '2026-11-20' / name
    path.write_text(''.join(json.dumps(row) + '\n' for row in rows))
    old = (query_store.NOW - dt.timedelta(hours=1)).timestamp()
    os.utime(path, (old, old))
    return str(path)


def rows_of(home) -> list[dict]:
    return [json.loads(line) for path in sorted(
        (home / 'results').glob('*/*.jsonl'))
        for line in path.read_text().splitlines()]


def test_the_index_keeps_the_latest_copy_of_a_record_and_each_once(home):
    (rows, ids, total), _ = counted(home)
    assert rows == ids == len({r['record_id'] for r in rows_of(home)})
    # a later copy of one record, delivered again with another value
    first = rows_of(home)[0]
    later = {**first, 'check_perf_value': first['check_perf_value'] + 5,
             'TimeGenerated': (query_store.NOW - dt.timedelta(hours=2)
                               ).isoformat()}
    settled_copy(home, 'again.jsonl', [later])
    assert counted(home)[0] == (rows, ids, total + 5)
    path = index.folder(home / 'results') / index.NAME
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute('SELECT count(*) FROM rows WHERE record_id = ?',
                           [first['record_id']]).fetchall() == [(1,)]
    # an older copy arriving later changes nothing
    older = {**first, 'check_perf_value': 1.0,
             'TimeGenerated': '2020-01-01T00:00:00+00:00'}
    settled_copy(home, 'late.jsonl', [older])
    assert counted(home)[0] == (rows, ids, total + 5)


def test_a_new_session_alone_is_read(home, monkeypatch):
    before, _ = counted(home)
    read = []
    select = json_lines.select
    monkeypatch.setattr(json_lines, 'select', lambda files, columns: (
        read.extend(files), select(files, columns))[1])
    new = settled_copy(home, 'new.jsonl', [
        {**rows_of(home)[0], 'record_id': 'brand-new'}])
    after, _ = counted(home)
    assert read == [new] and after[0] == before[0] + 1
    read.clear()
    assert counted(home)[0] == after and read == []


def test_a_lost_file_or_a_deleted_index_builds_it_again(home):
    (rows, _, _), _ = counted(home)
    lost = sorted((home / 'results').glob('*/*.jsonl'))[0]
    gone = len(lost.read_text().splitlines())
    lost.unlink()
    assert counted(home)[0][0] == rows - gone + 1   # its twice-stored row
    assert str(lost) not in ingested(home)
    path = index.folder(home / 'results') / index.NAME
    path.write_bytes(b'not a DuckDB file')
    assert counted(home)[0][0] == rows - gone + 1
    path.unlink()
    assert counted(home)[0][0] == rows - gone + 1 and path.exists()


def test_damaged_lines_are_counted_once_and_named_without_reading_again(
        home, monkeypatch, capsys):
    damaged = sorted((home / 'results').glob('*/*.jsonl'))[2]
    lines = damaged.read_text().splitlines()
    lines.insert(1, '{"record_id": "cut", "check_perf_val')
    stamp = damaged.stat().st_mtime
    damaged.write_text('\n'.join(lines) + '\n')
    os.utime(damaged, (stamp, stamp))
    (rows, _, _), notes = counted(home)
    assert notes == ['1 line(s) of the local store could not be read (a '
                     'session still writing, or a damaged file) and were '
                     'left out']
    assert ingested(home)[str(damaged)] == 1
    capsys.readouterr()
    monkeypatch.setattr(json_lines, 'select', None)     # no JSON read
    runner = Runner(results_dir=home / 'results', now=query_store.NOW)
    runner.run(COUNT)
    assert runner._con.damaged == [str(damaged)]
    assert len(runner.notes()) == 1
    assert f'{damaged} line 2: not JSON' in capsys.readouterr().err
    runner.close()


def test_a_reader_waits_for_the_writer_then_reads_every_json_line(
        home, monkeypatch):
    expected, _ = counted(home)
    new = settled_copy(home, 'new.jsonl', [
        {**rows_of(home)[0], 'record_id': 'brand-new'}])
    where = index.folder(home / 'results')
    monkeypatch.setenv(index.WAIT_VARIABLE, '0.2')
    with open(where / index.LOCK, 'a') as writer:
        fcntl.flock(writer, fcntl.LOCK_EX)       # an ingest at work
        answer, notes = counted(home)
    assert answer[0] == expected[0] + 1
    assert notes == ['another command is writing the query index; waited '
                     '0.2 s (CLUSTERPROOF_QUERY_INDEX_WAIT), then read every '
                     'JSON line']
    assert new not in ingested(home)


def test_new_files_while_another_command_reads_are_read_at_query_time(home):
    expected, _ = counted(home)
    reading = Runner(results_dir=home / 'results', now=query_store.NOW)
    reading.run(COUNT)                         # holds the index open
    new = settled_copy(home, 'new.jsonl', [
        {**rows_of(home)[0], 'record_id': 'brand-new'}])
    answer, notes = counted(home)
    assert answer[0] == expected[0] + 1 and notes == []
    assert new not in ingested(home)
    reading.close()
    assert counted(home)[0] == answer and new in ingested(home)


PAUSED_INGEST = """
import pathlib, runpy, sys, time
from scripts.query import index
removing = index._remove_older_copies
go = pathlib.Path(sys.argv[1])

def paused(con, files):
    removing(con, files)                # mid-transaction, the lock held
    (go.parent / 'paused').touch()
    while not go.exists():
        time.sleep(0.02)
index._remove_older_copies = paused
sys.argv = ['clusterproof', *sys.argv[2:]]
runpy.run_path('scripts/clusterproof', run_name='__main__')
"""


def test_a_query_during_a_real_ingest_answers_the_same_rows(home):
    """A command building the index, stopped inside its transaction: a
    query beside it answers the same rows from the JSON lines and says so;
    once the build is done, from the index."""
    env = {**local_env(home), index.WAIT_VARIABLE: '0'}
    (home / 'count.kql').write_text(COUNT.text)
    query = ['query', str(home / 'count.kql'), '--json']
    builder = subprocess.Popen(
        [sys.executable, '-c', PAUSED_INGEST, str(home / 'go'), *query],
        cwd=str(REPO), env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    cli = [sys.executable, str(REPO / 'scripts' / 'clusterproof'), *query]
    try:
        for _ in range(3000):
            if (home / 'paused').exists() or builder.poll() is not None:
                break
            time.sleep(0.02)
        assert (home / 'paused').exists(), builder.stderr.read()
        during = subprocess.run(cli, env=env, capture_output=True,
                                text=True, timeout=120)
    finally:
        (home / 'go').touch()
        built, errors = builder.communicate(timeout=120)
    assert builder.returncode == 0, errors
    assert json.loads(during.stdout) == json.loads(built), during.stderr
    assert 'writing the query index' in during.stderr
    after = subprocess.run(cli, env=env, capture_output=True, text=True,
                           timeout=120)
    assert json.loads(after.stdout) == json.loads(built)
    assert 'note' not in after.stderr


def _copied_store(home, copies: int, files: int = 1) -> None:
    """The query store with each session's rows written *copies* times
    under new record_ids, in each of *files* files beside it: ~23k rows,
    38 MB of JSON lines at 300 copies in one file."""
    query_store.build(home)
    query_store.settle(home)
    for path in sorted((home / 'results').glob('*/*.jsonl')):
        stamp = path.stat().st_mtime
        lines = path.read_text().splitlines()
        for part in range(files):
            target = path.with_name(f'{path.stem}-{part}.jsonl')
            target.write_text(''.join(
                line.replace('"record_id": "', f'"record_id": "{part}-{copy}-',
                             1) + '\n'
                for copy in range(copies) for line in lines))
            os.utime(target, (stamp, stamp))
        path.unlink()


def test_a_fresh_home_answers_every_query_and_the_report_in_little_memory(
        tmp_path, monkeypatch):
    """No cache/ at all (a store restored or moved), ~69k rows in 42 files,
    60MB: the first query builds the index (in batches), node_outliers
    spills (it needs 60 to 80MB here), and every shipped query and the
    report answer; the cache is one folder, cache/query."""
    from scripts.report import model
    _copied_store(tmp_path, 300, files=3)
    assert not (tmp_path / 'cache').exists()
    monkeypatch.setenv(local.MEMORY_VARIABLE, '60MB')
    runner = Runner(results_dir=tmp_path / 'results', now=query_store.NOW)
    counts = {name: len(runner.run(name).rows)
              for name in library.shipped()}
    assert counts['results'] == len({r['record_id']
                                     for r in rows_of(tmp_path)})
    assert counts['node_outliers'] and counts['trends']
    where = index.folder(tmp_path / 'results')
    assert (where / 'spill').is_dir(), 'nothing spilled: a larger store'
    runner.close()
    report = model.gather(Runner(results_dir=tmp_path / 'results',
                                 now=query_store.NOW))
    assert report.runs
    assert list((tmp_path / 'cache').iterdir()) == [where]
    assert {path.name for path in where.iterdir()
            if path.suffix != '.json'} <= {index.NAME, index.LOCK, 'spill'}


def test_too_little_memory_is_one_line_naming_the_setting(tmp_path):
    _copied_store(tmp_path, 20)
    env = {**local_env(tmp_path), local.MEMORY_VARIABLE: '20MB'}
    for command in (['query', 'node_outliers'], ['report', '--out',
                                                  str(tmp_path / 'r.html')]):
        done = subprocess.run(
            [sys.executable, str(REPO / 'scripts' / 'clusterproof'),
             *command], env=env, capture_output=True, text=True,
            timeout=120)
        assert done.returncode == 1 and 'Traceback' not in done.stderr
        [line] = done.stderr.splitlines()
        assert 'CLUSTERPROOF_QUERY_MEMORY=20MB is too little' in line
        assert 'give it more, e.g. CLUSTERPROOF_QUERY_MEMORY=640MB' in line


@pytest.mark.parametrize('name', ['trends', 'run_summary', 'node_outliers'])
def test_large_csv_and_json_written_by_duckdb_read_as_pythons(
        home, monkeypatch, name):
    """Past PYTHON_ROWS, DuckDB's COPY writes --csv and --json: the same
    values, read back, as output.py writes for a small result (a list in
    CSV as compact JSON)."""
    import csv
    import io

    from scripts.query import output

    def written(writer, most):
        monkeypatch.setattr(local, 'PYTHON_ROWS', most)
        runner = Runner(results_dir=home / 'results', now=query_store.NOW)
        buffer = io.StringIO()
        try:
            runner.write(name, writer, buffer)
        finally:
            runner.close()
        return buffer.getvalue()

    def compact(row):
        return {k: json.dumps(json.loads(v), separators=(',', ':'))
                if v.startswith('[') else v for k, v in row.items()}
    by_python = json.loads(written(output.write_json, 10 ** 9))
    assert by_python and json.loads(written(output.write_json, 0)) == \
        by_python
    python_csv = written(output.write_csv, 10 ** 9)
    duckdb_csv = written(output.write_csv, 0)
    assert python_csv.splitlines()[0] == duckdb_csv.splitlines()[0]
    assert [compact(r) for r in csv.DictReader(io.StringIO(duckdb_csv))] \
        == [compact(r) for r in csv.DictReader(io.StringIO(python_csv))]
