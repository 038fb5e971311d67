"""Translations are made on the translator's own connection
(scripts/query/translator.py) and cached; the shipped queries, translated
at set-up (translate_shipped.py), are not translated again on a new
store."""
import shutil

import duckdb_kql
import pytest

from scripts.query import index, library, translate_shipped, translator
from scripts.query.runner import Runner
from scripts.report import model
from tests.support import query_store


@pytest.fixture(scope='module')
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp('translator')
    query_store.build(home)
    query_store.settle(home)
    return home


def translations(home) -> list:
    return sorted(index.folder(home / 'results').glob('*.json'))


def test_a_cached_translation_serves_every_load_of_the_same_columns(
        home, monkeypatch):
    """The translation cache's key is the translator's two objects alone,
    whatever the reading made beside them (the index built, or read): cold
    and warm, a query is translated once."""
    shutil.rmtree(index.folder(home / 'results'), ignore_errors=True)
    runner = Runner(results_dir=home / 'results', now=query_store.NOW)
    cold = runner.run('run_summary').rows
    kept = translations(home)
    assert len(kept) == 2                    # the base, the query
    monkeypatch.setattr(duckdb_kql, 'to_sql', None)
    for _ in ('warm', 'warm again'):
        runner = Runner(results_dir=home / 'results', now=query_store.NOW)
        assert runner.run('run_summary').rows == cold
    assert translations(home) == kept


QUERIES = [*library.shipped().values(), library.outliers_only()]


def answered(home, query) -> list[str]:
    """The rows, in an order of their own (the base query states none)."""
    rows = Runner(results_dir=home / 'results', now=query_store.NOW
                  ).run(query).rows
    return sorted(map(repr, rows))


@pytest.fixture(scope='module')
def shipped(tmp_path_factory):
    into = tmp_path_factory.mktemp('share') / 'kql'
    return into, translate_shipped.translate(into)


def test_no_shipped_query_is_translated_on_a_new_store(home, shipped,
                                                       monkeypatch):
    """Every query `clusterproof query` and the report run finds its
    translation where set-up put it: duckdb-kql is never called, and the
    rows are those of a translation made on the store."""
    into, count = shipped
    assert count > len(QUERIES)          # the base for each set of columns
    expected = [answered(home, query) for query in QUERIES]
    report = model.gather(Runner(results_dir=home / 'results',
                                 now=query_store.NOW))
    shutil.rmtree(index.folder(home / 'results'))
    monkeypatch.setattr(translator, 'shipped', into)
    monkeypatch.setattr(duckdb_kql, 'to_sql', None)      # not translated
    assert [answered(home, query) for query in QUERIES] == expected
    again = model.gather(Runner(results_dir=home / 'results',
                                now=query_store.NOW))
    assert (again.runs, again.regressions) == (report.runs,
                                               report.regressions)
    assert translations(home) == []


def test_setting_up_again_translates_every_query_again(shipped,
                                                       monkeypatch):
    """Set-up run twice: the second finds the first's translations where
    it reads, and must not take them for its own (it would then ship
    none)."""
    into, count = shipped
    monkeypatch.setattr(translator, 'shipped', into)
    before = sorted(path.name for path in into.iterdir())
    assert translate_shipped.translate(into) == count
    assert sorted(path.name for path in into.iterdir()) == before
    assert oct(into.stat().st_mode & 0o777) == '0o755'
