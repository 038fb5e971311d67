"""A command on a store whose cache lacks more than the inline
limit answers from the JSON lines and leaves the entries to a builder
(scripts/query/cache_builder.py), which starts once the command has exited;
the report does too; a store that lacks little, and the builder's own
connection, write the entries themselves."""
import datetime as dt
import json
import os
import subprocess
import sys
import textwrap

import pytest

from scripts.query import cache_builder, library, local, parquet_cache
from scripts.query.result import QueryFailed
from scripts.query.runner import Runner
from tests.support import query_store
from tests.support.helpers import REPO
from tests.support.query_envs import local_env
from tests.support.query_reading import entries, session_files


@pytest.fixture
def started(monkeypatch):
    """cache_builder.start() recorded, not run: (results_dir, where) of
    each call; the lock it was handed is let go."""
    calls = []

    def record(results_dir, where, lock):
        calls.append((results_dir, where))
        os.close(lock)
    monkeypatch.setattr(cache_builder, 'start', record)
    return calls


def answers(home, name='trends', expect=False):
    runner = Runner(results_dir=home / 'results', now=query_store.NOW)
    if expect:
        runner.expect(name)
    result = runner.run(name)
    return result.rows, runner.notes()


def where(home):
    return parquet_cache.directory(home / 'results')


def emptied_over_the_limit(home, monkeypatch):
    """The answers with every entry written, then the entries removed and
    the inline limit below the store."""
    inline = answers(home)
    for entry in entries(home):
        entry.unlink()
    monkeypatch.setenv(cache_builder.INLINE_VARIABLE, '1B')
    return inline


def test_a_large_cold_store_is_answered_from_its_lines(home, monkeypatch,
                                                        started):
    inline = emptied_over_the_limit(home, monkeypatch)
    assert answers(home) == inline
    assert entries(home) == []
    assert started == [(home / 'results', where(home))]


def test_a_small_one_is_cached_by_the_query(home, monkeypatch, started):
    monkeypatch.setenv(cache_builder.INLINE_VARIABLE, '1GB')
    answers(home)
    assert len(entries(home)) == len(session_files(home)) and not started


def test_a_window_of_a_store_that_lacks_much_leaves_its_few_too(
        tmp_path, monkeypatch, started):
    """A day's files alone are within the inline limit, but the builder the
    rest needs would write theirs too: the query writes none."""
    query_store.build(tmp_path, days=3)
    query_store.settle(tmp_path)
    since = query_store.NOW - dt.timedelta(days=1)
    window = [path for path in session_files(tmp_path)
              if path.stat().st_mtime >=
              (since - local.CLOCK_SLACK).timestamp()]
    assert 0 < len(window) < len(session_files(tmp_path))

    def in_window():
        runner = Runner(results_dir=tmp_path / 'results',
                        now=query_store.NOW,
                        filters=library.Filters(since=since))
        return runner.run('trends').rows, runner.notes()
    inline = in_window()
    assert inline[0]
    for entry in entries(tmp_path):
        entry.unlink()
    monkeypatch.setenv(cache_builder.INLINE_VARIABLE,
                       f'{sum(path.stat().st_size for path in window)}B')
    assert in_window() == inline
    assert entries(tmp_path) == []
    assert started == [(tmp_path / 'results', where(tmp_path))]


def test_the_report_leaves_them_to_a_builder_too(home, monkeypatch,
                                                started):
    """A connection of many queries reads the lines once too: they are a
    compressed table every query reads (json_lines.create)."""
    inline = emptied_over_the_limit(home, monkeypatch)
    assert answers(home, expect=True) == inline
    assert entries(home) == []
    assert started == [(home / 'results', where(home))]


def test_the_builders_own_connection_writes_every_entry(home, monkeypatch,
                                                       started):
    emptied_over_the_limit(home, monkeypatch)
    local.connect(home / 'results')
    assert len(entries(home)) == len(session_files(home)) and not started


def test_a_torn_line_is_counted_when_read_for_a_builder(home, monkeypatch,
                                                        started):
    [first, *_] = session_files(home)
    stamp = first.stat().st_mtime
    with open(first, 'a') as fp:
        fp.write('{"record_id": "torn", "check_na')
    os.utime(first, (stamp, stamp))
    monkeypatch.setenv(cache_builder.INLINE_VARIABLE, '1B')
    rows, notes = answers(home)
    assert started and entries(home) == []
    assert notes == ['1 line(s) of the local store could not be read (a '
                     'session still writing, or a damaged file) and were '
                     'left out']
    monkeypatch.setenv(cache_builder.INLINE_VARIABLE, '1GB')
    assert answers(home) == (rows, notes)


def test_while_a_builder_works_no_other_is_started(home, monkeypatch,
                                                   started):
    inline = emptied_over_the_limit(home, monkeypatch)
    held = cache_builder.claim(where(home))
    try:
        assert answers(home) == inline
        assert not started and entries(home) == []
        assert not cache_builder.wait_for(where(home), timeout=0.2)
    finally:
        os.close(held)
    assert cache_builder.wait_for(where(home), timeout=5)


def test_a_cache_that_cannot_be_written_still_answers(home, monkeypatch,
                                                      started, capfd):
    inline = answers(home)
    cache = where(home)
    for item in cache.iterdir():
        item.unlink()
    cache.rmdir()
    cache.write_text('not a folder')
    monkeypatch.setenv(cache_builder.INLINE_VARIABLE, '1B')
    monkeypatch.setattr(parquet_cache, '_warned', [])
    assert answers(home) == inline and not started
    assert 'cannot be written' in capfd.readouterr().err


def test_an_inline_limit_without_a_unit_says_what_it_takes(home,
                                                           monkeypatch):
    for entry in entries(home):
        entry.unlink()
    monkeypatch.setenv(cache_builder.INLINE_VARIABLE, '100')
    with pytest.raises(QueryFailed, match=cache_builder.INLINE_VARIABLE):
        answers(home)


# A command that loads the store for one query, says so, and lives on for
# a while: the builder it started must not begin before it has exited.
_COMMAND = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from scripts.query import local
    local.connect(Path(sys.argv[1]), defer=True)
    print('loaded', flush=True)
    sys.stdin.read()                 # until the test closes it
''')


def test_the_builder_starts_once_the_command_has_exited(home):
    answers(home)
    expected = sorted(p.name for p in entries(home))
    assert len(expected) == len(session_files(home))
    for entry in entries(home):
        entry.unlink()
    env = dict(local_env(home), **{cache_builder.INLINE_VARIABLE: '1B'})
    command = subprocess.Popen(
        [sys.executable, '-c', _COMMAND, str(home / 'results')], env=env,
        cwd=str(REPO), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    try:
        assert command.stdout.readline() == 'loaded\n'
        assert not cache_builder.wait_for(where(home), timeout=1)
        assert entries(home) == []          # the builder waits
    finally:
        command.stdin.close()
        command.wait(timeout=60)
    assert command.returncode == 0
    assert cache_builder.wait_for(where(home), timeout=120)
    assert sorted(p.name for p in entries(home)) == expected
    assert (where(home) / cache_builder.LOG).read_text() == ''


def test_the_cli_answers_then_the_cache_is_there(home):
    """The whole path: `clusterproof query` answers from the lines, its
    builder writes every entry, and the next command reads them."""
    argv = [sys.executable, str(REPO / 'scripts' / 'clusterproof'), 'query',
            'run_summary', '--json']
    inline = subprocess.run(argv, env=local_env(home), capture_output=True,
                            text=True, timeout=120)
    for entry in entries(home):
        entry.unlink()
    env = dict(local_env(home), **{cache_builder.INLINE_VARIABLE: '1B'})
    cold = subprocess.run(argv, env=env, capture_output=True, text=True,
                          timeout=120)
    assert cold.returncode == 0, cold.stderr
    assert json.loads(cold.stdout) == json.loads(inline.stdout)
    assert cache_builder.wait_for(where(home), timeout=120)
    assert len(entries(home)) == len(session_files(home))
    warm = subprocess.run(argv, env=env, capture_output=True, text=True,
                          timeout=120)
    assert json.loads(warm.stdout) == json.loads(inline.stdout)
