"""The queries a connection is opened for are translated while the store is
read, on the translator's own connection (scripts/query/translator.py), and
give the rows a translation after the load gives; an error in one is raised
where that query runs."""
import shutil
import threading

import duckdb_kql
import pytest

from scripts.query import library, local, sql_cache
from scripts.query.runner import Runner
from tests import query_store
from tests.test_query_cache import home  # noqa: F401


def translations(home) -> list:
    return sorted(sql_cache.directory(home / 'results').glob('*.json'))


def test_a_query_is_translated_while_the_store_is_read(home, monkeypatch):
    """The load waits until duckdb-kql has translated the query it was
    opened for: were the translation made after the load, it would wait
    in vain."""
    text = library.resolve('node_outliers').text
    expected = local.run(local.connect(home / 'results'), text,
                         query_store.NOW).rows
    shutil.rmtree(sql_cache.directory(home / 'results'))
    translated = threading.Event()
    to_sql, load = duckdb_kql.to_sql, local._load

    def translating(kql, *args, **kwargs):
        made = to_sql(kql, *args, **kwargs)
        if kql == text:
            translated.set()
        return made

    def loading(*args):
        assert translated.wait(timeout=60), 'not translated during the load'
        return load(*args)
    monkeypatch.setattr(duckdb_kql, 'to_sql', translating)
    monkeypatch.setattr(local, '_load', loading)
    con = local.connect(home / 'results', queries=(text,), now=query_store.NOW)
    monkeypatch.setattr(duckdb_kql, 'to_sql', None)      # nothing after
    assert local.run(con, text, query_store.NOW).rows == expected


def test_a_cached_translation_serves_every_load_of_the_same_columns(
        home, monkeypatch):
    """The translation cache's key is the translator's two objects alone,
    whatever the load made beside them (a table of rows from JSON lines,
    the older copies found): cold and warm, a query is translated once."""
    runner = Runner(results_dir=home / 'results', now=query_store.NOW)
    cold = runner.run('run_summary').rows
    kept = translations(home)
    assert len(kept) == 2                    # the base, the query
    monkeypatch.setattr(duckdb_kql, 'to_sql', None)
    for _ in ('warm', 'warm again'):
        runner = Runner(results_dir=home / 'results', now=query_store.NOW)
        assert runner.run('run_summary').rows == cold
    assert translations(home) == kept


def test_an_error_in_a_query_made_ahead_is_raised_where_it_runs(home):
    count = 'clusterproof_results | count'
    expected = local.run(local.connect(home / 'results'), count).rows
    con = local.connect(home / 'results', queries=('clusterproof_results '
                                                   '| where nosuch > 1',))
    assert local.run(con, count).rows == expected
    with pytest.raises(local.InvalidQuery, match='nosuch'):
        local.run(con, 'clusterproof_results | where nosuch > 1')
