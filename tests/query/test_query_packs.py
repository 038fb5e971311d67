"""Packs of the Parquet cache (scripts/query/parquet_packs.py): a load
reads a few packs instead of an entry per session, each row once, and
whatever happens to a member (an append, a damaged pack, a window that
wants part of a pack) the answer is the one the entries give."""
import datetime as dt
import json
import re

import pytest

from scripts.query import library, local, parquet_cache, parquet_packs
from scripts.query.needs import Reading
from scripts.query.runner import Runner
from tests.support import query_store
from tests.support.query_reading import (NAMES, a_row, append, as_rows,
                                         entries, everything, session_files,
                                         stored)


@pytest.fixture
def small_packs(monkeypatch):
    monkeypatch.setattr(parquet_packs, 'PACK_ENTRIES', 2)
    monkeypatch.setattr(parquet_packs, 'PACK_MIN', 2)


def packs(home) -> list:
    return sorted(parquet_cache.directory(home / 'results')
                  .glob('pack-*.parquet'))


def files_read(con) -> list[str]:
    """The Parquet files the connection's view reads, by kind."""
    sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = "
                      "'_clusterproof_rows'").fetchall()[0][0]
    return sorted('pack' if name.startswith('pack-') else 'entry'
                  for name in re.findall(r"/([^/']+\.parquet)'", sql))


def test_a_load_reads_packs_of_the_entries(home, small_packs, monkeypatch):
    monkeypatch.setattr(parquet_packs, 'PACK_MIN', 99)
    alone = stored(home)                      # the entries, no pack
    monkeypatch.setattr(parquet_packs, 'PACK_MIN', 2)
    assert stored(home) == alone              # packs written, and read
    assert len(packs(home)) == 2 and len(entries(home)) == 4
    assert files_read(local.connect(home / 'results')) == ['pack', 'pack']
    assert stored(home) == alone


def test_too_few_entries_stay_as_they_are(home, monkeypatch):
    monkeypatch.setattr(parquet_packs, 'PACK_MIN', 5)
    stored(home)
    assert packs(home) == []
    assert files_read(local.connect(home / 'results')) == ['entry'] * 4


def test_every_query_answers_the_same_from_packs(home, small_packs,
                                                 monkeypatch):
    def answers():
        con = local.connect(home / 'results')
        return {name: as_rows(local.run(con, library.compose(
            library.resolve(name), None), query_store.NOW))
            for name in NAMES}
    monkeypatch.setattr(parquet_packs, 'PACK_MIN', 99)
    alone = answers()
    monkeypatch.setattr(parquet_packs, 'PACK_MIN', 2)
    assert answers() == alone
    assert packs(home)
    assert answers() == alone


def test_an_appended_member_leaves_its_pack(home, small_packs, monkeypatch):
    stored(home)
    [first, *_] = session_files(home)
    append(first, a_row(first, record_id='appended-1') + '\n')
    rows = stored(home)
    assert 'appended-1' in {r[0] for r in rows}
    assert len({r[0] for r in rows}) == len(rows)          # each row once
    # the pack with the old entry is marked stale, then removed
    [mark] = parquet_cache.directory(home / 'results').glob('*.stale')
    monkeypatch.setattr(parquet_cache, 'SETTLED', dt.timedelta(0))
    assert stored(home) == rows
    assert not list(parquet_cache.directory(home / 'results')
                    .glob('*.stale'))
    assert len(packs(home)) == 2                            # packed again
    assert files_read(local.connect(home / 'results')) == ['pack', 'pack']


def test_a_window_reads_each_pack_that_holds_part_of_it(home, monkeypatch):
    """The last day's window wants one member of the pack (read whole: the
    query's filters leave the rest out) and the entry left alone."""
    monkeypatch.setattr(parquet_packs, 'PACK_ENTRIES', 3)
    monkeypatch.setattr(parquet_packs, 'PACK_MIN', 3)
    stored(home)
    assert len(packs(home)) == 1                 # 3 entries, 1 left alone
    # the last day's sessions: their files were last written 10 hours
    # before NOW, the first day's a day earlier, beyond the clock's slack
    last_day = query_store.NOW - dt.timedelta(hours=9)
    con = local.connect(home / 'results', Reading(start=last_day))
    assert files_read(con) == ['entry', 'pack']
    since = library.Filters(since=last_day)
    runner = Runner(results_dir=home / 'results', now=query_store.NOW,
                    filters=since)
    for name in NAMES:
        assert as_rows(runner.run(name)) == everything(home, name, since), \
            name


def test_a_deleted_session_does_not_come_back_through_its_pack(
        home, small_packs):
    before = stored(home)
    [first, *_] = session_files(home)
    gone = {json.loads(line)['record_id']
            for line in first.read_text().splitlines()}
    first.unlink()                     # its entry stays, as its pack does
    after = stored(home)
    assert after == [r for r in before if r[0] not in gone]
    assert files_read(local.connect(home / 'results')) == ['entry', 'pack']


def test_a_damaged_pack_is_removed_and_built_again(home, small_packs):
    answer = stored(home)
    [bad, _] = packs(home)
    bad.write_bytes(bad.read_bytes()[:100])
    assert stored(home) == answer
    assert len(packs(home)) == 2
    assert all(p.stat().st_size > 100 for p in packs(home))
