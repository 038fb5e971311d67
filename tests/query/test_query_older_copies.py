"""The older copies of records stored twice (scripts/query/older_copies.py):
found once for a set of Parquet files and kept, found again whenever rows
come from JSON lines or what was kept cannot be read, and the answer is
always the one finding them gives."""
import json
import os
import time

import duckdb
import pytest

from scripts.query import local, older_copies, parquet_cache
from tests.support.query_reading import a_row, append, session_files, stored


def kept(home) -> list:
    where = older_copies.directory(parquet_cache.Cache(home / 'results', []))
    return sorted(where.glob('older-*.parquet'))


def not_found_again(monkeypatch):
    def refuse(*args):
        raise AssertionError('older copies looked for again')
    monkeypatch.setattr(older_copies, '_find', refuse)


def test_found_once_for_the_same_files(home, monkeypatch):
    cold = stored(home)
    assert len(kept(home)) == 1
    not_found_again(monkeypatch)
    assert stored(home) == cold
    # the one record stored twice is still there once
    ids = [row[0] for row in cold]
    assert len(ids) == len(set(ids))


def test_new_files_are_a_new_set(home):
    """A copy appended to a settled file changes its entry's name, so the
    kept answer of the old set is not used; the later copy wins."""
    stored(home)
    [first, second, *_] = session_files(home)
    copy = a_row(first, check_perf_value=-3.0,
                 TimeGenerated='2031-01-01T00:00:00+00:00')
    append(second, copy + '\n')
    rows = stored(home)
    assert len(kept(home)) == 2
    record_id = json.loads(copy)['record_id']
    assert [row[1] for row in rows if row[0] == record_id] == [-3.0]


def test_a_file_written_again_under_its_name_is_a_new_set(home):
    """The kept answer names rows by their place in a file: an entry (or a
    pack) written again with its rows in another order must not be read
    with it, or the wrong copy is left out."""
    cold = stored(home)
    entries = parquet_cache.directory(home / 'results')
    for entry in sorted(entries.glob('*.parquet')):
        reversed_ = entry.with_name('.reversed')
        con = duckdb.connect()
        con.execute(f"COPY (SELECT * FROM read_parquet('{entry}', "
                    'file_row_number=true) ORDER BY file_row_number DESC) '
                    f"TO '{reversed_}' (FORMAT parquet)")
        con.execute(f"COPY (SELECT * EXCLUDE (file_row_number) FROM "
                    f"read_parquet('{reversed_}')) TO '{entry}' "
                    '(FORMAT parquet)')
        reversed_.unlink()
    assert stored(home) == cold
    assert len(kept(home)) == 2


def test_what_cannot_be_read_is_found_again(home):
    cold = stored(home)
    [answer] = kept(home)
    answer.write_bytes(b'not parquet')
    assert stored(home) == cold
    assert kept(home) == [answer]
    duckdb.connect().execute(f"SELECT * FROM read_parquet('{answer}')")


def test_rows_from_json_lines_are_looked_at_each_time(home, monkeypatch):
    """A session still writing is read from its lines: nothing is kept for
    a set of files that includes them."""
    [first, *_] = session_files(home)
    now = time.time()
    os.utime(first, (now, now))
    cold = stored(home)
    assert kept(home) == []
    found = []
    original = older_copies._find
    monkeypatch.setattr(older_copies, '_find',
                        lambda *args: found.append(1) or original(*args))
    assert stored(home) == cold
    assert found == [1]


def a_view_with_a_copy(con) -> None:
    con.execute("CREATE VIEW rows AS SELECT * FROM (VALUES "
                "('a', TIMESTAMP '2026-01-01', 'x', 0), "
                "('a', TIMESTAMP '2026-01-02', 'y', 0)) "
                "AS t(record_id, TimeGenerated, _src, _pos)")


def test_only_the_most_recently_used_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(older_copies, 'KEPT', 2)
    cache = parquet_cache.Cache(tmp_path / 'results', [])
    con = duckdb.connect()
    a_view_with_a_copy(con)
    for files in (['one'], ['two'], ['one'], ['three']):
        assert older_copies.find(con, 'rows', 'older', files, 0, cache) == 1
        # the older copy: the earlier TimeGenerated
        assert con.execute('SELECT * FROM older').fetchall() == [('x', 0)]
        con.execute('DROP TABLE older')
        time.sleep(0.02)          # mtimes that order the uses
    # 'one' was used again after 'two': 'two' is the one pruned
    assert set(older_copies.directory(cache).iterdir()) == {
        older_copies.kept_path(cache, ['one']),
        older_copies.kept_path(cache, ['three'])}


@pytest.mark.parametrize('from_lines', [0, 1])
def test_a_kept_answer_is_never_used_for_rows_from_lines(tmp_path,
                                                         from_lines):
    cache = parquet_cache.Cache(tmp_path / 'results', [])
    con = duckdb.connect()
    con.execute("CREATE VIEW rows AS SELECT 'a' AS record_id, "
                "TIMESTAMP '2026-01-01' AS TimeGenerated, 'x' AS _src, "
                "0 AS _pos")
    assert older_copies.find(con, 'rows', 'older', ['one'], from_lines,
                             cache) == 0
    assert len(list(older_copies.directory(cache).glob('*'))) == \
        (0 if from_lines else 1)


def test_the_engine_leaves_the_kept_older_copies_out(home):
    """The kept answer is read into the same table the engine anti-joins."""
    stored(home)
    con = local.connect(home / 'results')
    assert con.execute('SELECT count(*) FROM "_clusterproof_older_copies"'
                       ).fetchall() == [(1,)]
