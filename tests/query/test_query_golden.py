"""Every shipped query on a small realistic store (tests/support/query_store.py),
run by the local engine (DuckDB + duckdb-kql) at a fixed 'now': the rows
must be the expected ones in tests/support/data/query_golden/<name>.json, read from
the JSON lines (cold), from the index (warm) and with every session running.

To regenerate after a deliberate change to a query or the store, run with
CLUSTERPROOF_UPDATE_GOLDEN=1, then read the diff before committing it."""
import json
import os
import shutil

import pytest

from scripts.query import index, library, output
from scripts.query.runner import Runner
from tests.support import helpers, query_store

GOLDEN = helpers.DATA / 'query_golden'
NAMES = [name for name in library.shipped() if name != library.BASE_NAME]


@pytest.fixture(scope='module')
def store_home(tmp_path_factory):
    home = tmp_path_factory.mktemp('store')
    rows = query_store.build(home)
    query_store.settle(home)
    return home, rows


@pytest.fixture(scope='module', params=['cold', 'warm', 'running'])
def runner(request, store_home):
    """Every test below three times: with no index (the first connection
    builds it from the JSON lines), with the index and no JSON line read
    at all, and with every session still writing (every file read at
    query time, none indexed)."""
    home, _ = store_home
    where = index.folder(home / 'results')
    if request.param == 'cold':
        shutil.rmtree(where, ignore_errors=True)
        yield Runner(results_dir=home / 'results', now=query_store.NOW)
        assert (where / index.NAME).exists()
        return
    if request.param == 'warm':
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(index.json_lines, 'select', _no_json)
            yield Runner(results_dir=home / 'results', now=query_store.NOW)
        return
    shutil.rmtree(where, ignore_errors=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index.Stored, 'settled', lambda self: False)
        yield Runner(results_dir=home / 'results', now=query_store.NOW)
    shutil.rmtree(where, ignore_errors=True)    # it indexed no file


def _no_json(*args, **kwargs):
    raise AssertionError('a query over the index read JSON lines')


def as_rows(result) -> list[dict]:
    return json.loads(output.as_json(result))


@pytest.mark.parametrize('name', NAMES)
def test_golden_rows(runner, name):
    rows = as_rows(runner.run(name))
    path = GOLDEN / f'{name}.json'
    if os.environ.get('CLUSTERPROOF_UPDATE_GOLDEN'):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows, indent=1) + '\n')
    assert rows == json.loads(path.read_text())


def test_the_base_counts_a_twice_stored_record_once(store_home, runner):
    home, rows = store_home
    stored_lines = sum(len(p.read_text().splitlines())
                       for p in (home / 'results').glob('*/*.jsonl'))
    assert stored_lines == len(rows) + 1          # the duplicate is there
    result = runner.run('results')
    ids = [r['record_id'] for r in result.records()]
    assert sorted(ids) == sorted(r['record_id'] for r in rows)


def test_node_outliers_finds_the_one_bad_node(runner):
    outliers = [r for r in runner.run('node_outliers').records()
                if r['outlier']]
    assert [(r['node'], r['check_perf_var'], r['cluster']) for r in outliers] \
        == [('hb-3', 'triad_bw', 'prod-eastus')]
    [bad] = outliers
    # its four peers, itself left out of their median
    assert bad['value'] == 560000.0 and bad['peers'] == 4
    assert bad['peer_median'] == 710000.0
    assert bad['worse_pct'] > 10 and bad['robust_z'] < -3.5


def test_node_outliers_needs_four_peers(runner):
    # three ND nodes (two peers each): too few to judge (tests/query/test_comparison_peers.py judges
    # them with a smaller minimum, each HCA apart)
    rows = [r for r in runner.run('node_outliers').records()
            if r['check_perf_var'] == 'bw_avg']
    assert rows == []


def test_regressions_find_the_drop_the_latency_and_the_failed_reference(
        runner):
    found = {(r['check_perf_var'], r['reason'])
             for r in runner.run('regressions').records()}
    assert found == {('triad_bw', 'below baseline and reference'),
                     ('latency', 'below baseline'),
                     ('write_bandwidth_mib', 'below reference')}


def test_failures_fold_metrics_into_one_row_per_test(runner):
    rows = runner.run('failures').records()
    assert sorted(r['check_jobid'] for r in rows) == \
        sorted(['ior-77', '162', 'nccl-6-2'])
    ior = next(r for r in rows if r['check_jobid'] == 'ior-77')
    assert ior['failed_metrics'] == ['write_bandwidth_mib']


def test_run_summary_counts_tests_nodes_and_not_measured(runner):
    rows = {r['session_id']: r for r in runner.run('run_summary').records()}
    east = rows['20261120T020000Z-eastus']
    assert (east['tests_run'], east['tests_passed'], east['tests_failed'],
            east['nodes_covered']) == (6, 5, 1, 5)
    assert east['slowest_metric'] == 'StreamCheck triad_bw'
    assert east['slowest_pct_of_reference'] == 80.0
    west = rows['20261120T020000Z-westeu']
    assert (west['not_measured'], west['tests_failed']) == (1, 1)


def test_share_of_reference_shows_percent_of_peak_beside_reference(runner):
    rows = [r for r in runner.run('share_of_reference').records()
            if r['check_perf_var'] == 'bw_avg' and r['device'] == 'mlx5_ib1']
    assert rows and all(r['pct_of_peak'] is not None for r in rows)
    nd1 = rows[0]
    assert nd1['pct_of_reference'] == round(100 * 388 / 390, 1)
    assert nd1['pct_of_peak'] == round(100 * 388 / 400, 1)


def test_filters_narrow_every_query(store_home):
    home, _ = store_home
    west = Runner(results_dir=home / 'results', now=query_store.NOW,
                  filters=library.Filters(cluster='prod-westeu'))
    assert {r['cluster'] for r in west.run('trends').records()} == \
        {'prod-westeu'}
    since = query_store.NOW.replace(hour=0)
    recent = Runner(results_dir=home / 'results', now=query_store.NOW,
                    filters=library.Filters(since=since, partition='hbv4'))
    summary = recent.run('run_summary').records()
    assert [r['session_id'] for r in summary] == ['20261120T020000Z-eastus']


@pytest.mark.parametrize('filters', [
    library.Filters(cluster='prod-westeu'),
    library.Filters(since=query_store.NOW.replace(hour=0), partition='hbv4'),
    library.Filters(since=query_store.NOW.replace(day=15),
                    cluster="o'brien"),
])
def test_the_local_filters_keep_the_rows_their_kql_keeps(store_home,
                                                         filters):
    """The local engine applies the filters to its view as SQL; Log
    Analytics reads them as KQL after the base: the same rows."""
    home, _ = store_home
    runner = Runner(results_dir=home / 'results', now=query_store.NOW)
    kql = library.Query('filtered', 'filtered by KQL', 'clusterproof_results\n'
                        + filters.kql() + '| project record_id\n')
    by_kql = {r['record_id'] for r in runner.run(kql).records()}
    filtered = Runner(results_dir=home / 'results', now=query_store.NOW,
                      filters=filters)
    by_sql = {r['record_id'] for r in filtered.run(
        library.Query('filtered', 'filtered by SQL', 'clusterproof_results\n'
                      '| project record_id\n')).records()}
    assert by_sql == by_kql
    if filters.cluster == 'prod-westeu':
        assert by_kql and len(by_kql) < len(query_store_ids(runner))


def query_store_ids(runner) -> set:
    return {r['record_id'] for r in runner.run(library.Query(
        'all', 'every row', 'clusterproof_results\n| project record_id\n')
    ).records()}


def test_a_new_since_reuses_the_translations(store_home):
    """--since 7d is a new time each second: it must not make the base (and
    so every query) a new text for the translation cache."""
    home, _ = store_home
    kql_cache = index.folder(home / 'results')
    for hour in (1, 2, 3):
        since = query_store.NOW.replace(hour=hour)
        Runner(results_dir=home / 'results', now=query_store.NOW,
               filters=library.Filters(since=since)).run('trends')
        if hour == 1:
            translated = sorted(kql_cache.iterdir())
    assert sorted(kql_cache.iterdir()) == translated


def test_an_empty_store_answers_no_rows(tmp_path):
    runner = Runner(results_dir=tmp_path / 'results', now=query_store.NOW)
    for name in library.shipped():
        assert runner.run(name).rows == [], name


def test_a_streamed_result_is_the_same_rows_a_chunk_at_a_time(runner):
    from scripts.query import local
    query = library.shipped()['node_outliers']
    whole = runner.run(query)
    stream = local.stream(runner._local(), query.text,
                          query_store.NOW,
                          chunk_rows=3)
    chunks = list(stream.chunks)
    assert len(chunks) > 1 and all(len(chunk) <= 3 for chunk in chunks)
    assert (stream.columns, [row for chunk in chunks for row in chunk]) == \
        (whole.columns, whole.rows)
