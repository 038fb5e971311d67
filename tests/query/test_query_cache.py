"""The local engine's Parquet cache (scripts/query/parquet_cache.py): a
settled session file is read from its entry, an entry follows its file (an
append, a new schema column), and whatever happens to the cache (torn
lines, NaN, a cache that cannot be written, a corrupt entry, two queries at
once) the answer is the one the JSON lines give."""
import copy
import json
import os
import subprocess
import sys
import time

import duckdb
import pytest

from config.results.rows import schema as row_schema
from scripts.query import json_lines, local, parquet_cache
from tests.support import query_store
from tests.support.helpers import REPO
from tests.support.query_envs import local_env
from tests.support.query_reading import (SETTLED_AT, a_row, append, entries,
                                         session_files, stored)


def no_json(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError('JSON lines read')
    monkeypatch.setattr(json_lines, 'read', refuse)
    monkeypatch.setattr(json_lines, 'write_parquet', refuse)


def test_a_warm_load_reads_the_entries_alone(home, monkeypatch):
    cold = stored(home)
    assert len(entries(home)) == len(session_files(home)) == 4
    no_json(monkeypatch)
    assert stored(home) == cold


def test_the_rows_are_read_in_place_not_held(home, monkeypatch):
    """Warm, a settled session's rows stay in its entry: the connection
    holds none of them, only a view over the entries."""
    stored(home)
    con = local.connect(home / 'results')
    assert con.execute("SELECT table_type FROM information_schema.tables "
                       "WHERE table_name = 'ReFrameResults_CL'"
                       ).fetchall() == [('VIEW',)]
    # the rows read from JSON lines (none), the older copy of the record
    # stored twice
    assert dict(con.execute('SELECT table_name, estimated_size FROM '
                            'duckdb_tables()').fetchall()) == \
        {'_clusterproof_lines': 0, '_clusterproof_older_copies': 1}
    assert con.execute('SELECT count(*) FROM "ReFrameResults_CL"'
                       ).fetchall()[0][0] > 0


def test_a_record_stored_again_by_a_session_still_writing(home):
    """The copy results.kql's arg_max keeps (the later TimeGenerated) is
    kept, one from an entry and one from JSON lines alike, cold and warm."""
    [first, second, *_] = session_files(home)
    row = json.loads(first.read_text().splitlines()[0])
    later = dict(row, check_perf_value=-1.0,
                 TimeGenerated='2030-01-01T00:00:00+00:00')
    now = time.time()
    append(second, json.dumps(later) + '\n', when=now)   # still writing
    for _ in ('cold', 'warm'):
        kept = [r for r in stored(home) if r[0] == row['record_id']]
        assert [r[1] for r in kept] == [-1.0]
    append(second, '', when=SETTLED_AT)                    # settled
    append(first, json.dumps(dict(later, check_perf_value=-2.0,
                                  TimeGenerated='2031-01-01T00:00:00+00:00'))
           + '\n')
    for _ in ('cold', 'warm'):
        kept = [r for r in stored(home) if r[0] == row['record_id']]
        assert [r[1] for r in kept] == [-2.0]
    assert len(entries(home)) == 4


def test_a_file_still_being_written_is_read_but_not_cached(home):
    [first, *_] = session_files(home)
    now = time.time()
    os.utime(first, (now, now))
    rows = stored(home)
    assert len(entries(home)) == 3
    assert len(rows) == len(stored(home))
    assert {r[0] for r in rows} >= {json.loads(line)['record_id']
                                    for line in first.read_text().splitlines()}


def test_an_appended_file_is_read_again(home):
    before = stored(home)
    [first, *_] = session_files(home)
    append(first, a_row(first, record_id='appended-1') + '\n')
    after = stored(home)
    assert len(after) == len(before) + 1
    assert 'appended-1' in {r[0] for r in after}
    # the file's earlier entry is gone: one entry per file
    assert len(entries(home)) == 4


def test_a_torn_line_is_counted_cold_and_warm(home, monkeypatch):
    [first, *_] = session_files(home)
    append(first, a_row(first, record_id='torn')[:40])
    cold = local.connect(home / 'results')
    assert local.unreadable_lines(cold) == 1
    no_json(monkeypatch)
    warm = local.connect(home / 'results')
    assert local.unreadable_lines(warm) == 1
    assert warm.execute('SELECT count(*) FROM "ReFrameResults_CL" WHERE '
                        "record_id = 'torn'").fetchall() == [(0,)]


def test_nan_and_infinity_read_as_null_warm(home, monkeypatch):
    [first, *_] = session_files(home)
    text = a_row(first, record_id='nan-1', check_perf_value=1.0).replace(
        '"check_perf_value": 1.0', '"check_perf_value": NaN')
    assert 'NaN' in text
    infinite = a_row(first, record_id='inf-1', check_perf_value=1.0).replace(
        '"check_perf_value": 1.0', '"check_perf_value": -Infinity')
    assert 'Infinity' in infinite
    append(first, text + '\n' + infinite + '\n')
    cold = dict((r[0], r[1]) for r in stored(home))
    no_json(monkeypatch)
    warm = dict((r[0], r[1]) for r in stored(home))
    assert cold['nan-1'] is None and warm['nan-1'] is None
    assert 'inf-1' in warm and warm['inf-1'] is None


def test_a_new_schema_column_invalidates_every_entry(home, tmp_path):
    stored(home)
    old = entries(home)
    schema = copy.deepcopy(row_schema.schema())   # the cached one stays as is
    schema['columns'].append({'name': 'cache_probe', 'type': 'string'})
    changed = tmp_path / 'results_schema.json'
    changed.write_text(json.dumps(schema))
    shipped, row_schema.SCHEMA_FILE = row_schema.SCHEMA_FILE, changed
    row_schema.schema.cache_clear()
    try:
        con = local.connect(home / 'results')
    finally:
        row_schema.SCHEMA_FILE = shipped
        row_schema.schema.cache_clear()
    columns = [c[0] for c in con.execute(
        'DESCRIBE "ReFrameResults_CL"').fetchall()]
    assert 'cache_probe' in columns
    new = entries(home)
    assert len(new) == 4 and not set(new) & set(old)


def test_a_cache_that_cannot_be_written_costs_only_speed(home, monkeypatch,
                                                         capfd):
    answer = stored(home)
    cache = parquet_cache.directory(home / 'results')
    for entry in entries(home):
        entry.unlink()
    cache.rmdir()
    cache.write_text('not a directory')      # as a read-only home would
    monkeypatch.setattr(parquet_cache, '_warned', [])
    assert stored(home) == answer
    assert stored(home) == answer
    warnings = [line for line in capfd.readouterr().err.splitlines()
                if 'query cache' in line]
    assert len(warnings) == 1 and 'slower' in warnings[0]


def test_a_corrupt_entry_is_ignored_and_built_again(home):
    answer = stored(home)
    [bad, *_] = entries(home)
    bad.write_bytes(bad.read_bytes()[:100])
    assert stored(home) == answer
    assert len(entries(home)) == 4
    assert all(e.stat().st_size > 100 for e in entries(home))


def test_two_queries_at_once_on_a_cold_cache(home):
    """Two CLI processes building the same entries at once: both answer
    the JSON lines' rows, and no half-written entry is left."""
    env = local_env(home)
    expected = stored(home)
    for entry in entries(home):
        entry.unlink()
    argv = [sys.executable, str(REPO / 'scripts' / 'clusterproof'), 'query',
            'run_summary', '--json']
    both = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             cwd=str(REPO)) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in both]
    assert [p.returncode for p in both] == [0, 0], outputs
    first, second = (json.loads(out) for out, _ in outputs)
    assert first == second and len(first) == 4
    cache = parquet_cache.directory(home / 'results')
    assert sorted(p.name for p in cache.iterdir()) == \
        sorted(p.name for p in entries(home))
    assert len(entries(home)) == 4 and stored(home) == expected


def every_column(home) -> list[tuple]:
    con = local.connect(home / 'results')
    return con.execute('SELECT * FROM "ReFrameResults_CL" ORDER BY ALL'
                       ).fetchall()


@pytest.mark.parametrize('memory', ['320MB', '640MB'])   # 1 or 2 at once
def test_an_entry_holds_what_its_json_lines_read_as_a_table_hold(
        home, monkeypatch, memory):
    """Each entry is written straight from its file's JSON lines, as many
    at once as DuckDB has threads: every column of every row as the table
    of a session still writing holds it, the unreadable lines left out
    and counted in the entry's name."""
    monkeypatch.setenv(local.MEMORY_VARIABLE, memory)
    [first, second, *_] = session_files(home)
    append(first, a_row(first, record_id='torn')[:40])
    append(second, '{"not": "a row"\n')
    append(second, a_row(second, record_id='nan', check_perf_value=1.5)
           .replace('1.5', 'NaN') + '\n')
    with monkeypatch.context() as nothing_settled:
        nothing_settled.setattr(parquet_cache, 'settled', lambda stat: False)
        from_lines = every_column(home)
        assert entries(home) == []
    built = every_column(home)
    assert len(built) > 20
    assert built == from_lines
    assert ('nan', None) in {(row[2], row[16]) for row in built}
    names = sorted(e.name for e in entries(home))
    assert len(names) == 4 and sorted(n.rsplit('-', 1)[1] for n in names) \
        == ['0.parquet', '0.parquet', '1.parquet', '1.parquet']
    assert local.unreadable_lines(local.connect(home / 'results')) == 2
    assert every_column(home) == from_lines


def test_lines_read_a_file_at_a_time_are_those_read_at_once(home):
    """json_lines.read in batches (here one file each, every batch but the
    last compressed before the next) holds the rows one statement reads,
    and counts the same unreadable lines."""
    [first, second, *_] = session_files(home)
    append(first, a_row(first, record_id='torn')[:40])
    append(second, '{"not": "a row"\n')
    files = [str(path) for path in session_files(home)]
    columns = row_schema.schema()['columns']
    held = []
    for batch_bytes in (2**40, 1):
        con = duckdb.connect()
        con.execute("SET TimeZone='UTC'")
        table = json_lines.create(con, 'lines', 'rows', columns)
        unreadable = json_lines.read(con, table, columns, files, batch_bytes)
        held.append((unreadable, con.execute(
            f'SELECT * FROM {table} ORDER BY ALL').fetchall()))
    assert held[0][0] == 2 and len(held[0][1]) > 20
    assert held[1] == held[0]
    assert [len(b) for b in json_lines._batches(files, 1)] == [1] * len(files)


def test_a_file_appended_while_it_is_read_keeps_no_entry(home, monkeypatch):
    """A session appends between the load's stat and the writing of its
    entry: nothing is kept under the older identity, the file is read as
    a session still writing is (with the new row), and the next load
    keeps its entry."""
    [first, *_] = session_files(home)
    write, appended = json_lines.write_parquet, []

    def write_then_append(con, columns, path, target):
        lost = write(con, columns, path, target)
        if path == str(first) and not appended:
            append(first, a_row(first, record_id='late') + '\n')
            appended.append(path)
        return lost
    monkeypatch.setattr(json_lines, 'write_parquet', write_then_append)
    assert 'late' in {r[0] for r in stored(home)}
    assert len(entries(home)) == 3
    monkeypatch.setattr(json_lines, 'write_parquet', write)
    assert 'late' in {r[0] for r in stored(home)}
    assert len(entries(home)) == 4


def test_only_a_damaged_file_is_read_again_to_name_its_lines(
        tmp_path, monkeypatch, capsys):
    """A file with a torn line among many good ones: the note names its
    line through the store's reader, and that file is the only one the
    reader opens, cold, warm, and while the file is still being written."""
    from config.results.store import files as store
    from scripts.query.runner import Runner
    query_store.build(tmp_path, days=6)
    query_store.settle(tmp_path)
    files = session_files(tmp_path)
    torn = files[len(files) // 2]
    append(torn, a_row(torn, record_id='torn')[:40])
    today = []                       # every file through the store's reader
    for path in files:
        list(store.file_rows(path, warn=today.append))
    assert len(files) == 12 and len(today) == 1 and str(torn) in today[0]
    opened = []
    file_rows = store.file_rows
    monkeypatch.setattr(store, 'file_rows', lambda path, *args: (
        opened.append(path), file_rows(path, *args))[1])

    def noted() -> list[str]:
        runner = Runner(results_dir=tmp_path / 'results')
        runner.run('results')
        assert len(runner.notes()) == 1
        return capsys.readouterr().err.splitlines()
    for _ in ('cold', 'warm'):
        assert noted() == [f'clusterproof: warning: {today[0]}']
        assert opened == [torn]
        opened.clear()
    now = time.time()
    os.utime(torn, (now, now))        # still written: no entry counts it
    assert noted() == [f'clusterproof: warning: {today[0]}']
    assert opened == [torn]


def test_a_home_under_a_folder_named_like_a_column_reads_its_own_rows(
        tmp_path, monkeypatch):
    # DuckDB reads 'key=value' folders of a Parquet path as columns (hive
    # partitioning) and lets them replace the file's own: a home under
    # .../cluster=lab/ would have every cached row's cluster read as 'lab'.
    home = tmp_path / 'cluster=lab'
    written = query_store.build(home, days=2)
    query_store.settle(home)
    con = local.connect(home / 'results')           # cold: writes entries
    cold = con.execute('SELECT record_id, cluster FROM "ReFrameResults_CL" '
                       'ORDER BY ALL').fetchall()
    assert cold == sorted((r['record_id'], r['cluster']) for r in written)
    assert entries(home)
    no_json(monkeypatch)
    con = local.connect(home / 'results')           # warm: the entries
    assert con.execute('SELECT record_id, cluster FROM "ReFrameResults_CL" '
                       'ORDER BY ALL').fetchall() == cold
