"""`clusterproof query` as a user runs it: on the local store with no Azure
at all, and against Log Analytics (a loopback stand-in of its query API,
reached through real azure-identity and azure-monitor-query)."""
import csv
import datetime as dt
import io
import json

import pytest

from scripts.query import library
from tests.support import query_store
from tests.support.cli_runs import cli
from tests.support.query_envs import cloud_env, local_env

NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


@pytest.fixture
def home(tmp_path):
    query_store.build(tmp_path, now=NOW)
    return tmp_path


def test_list_names_every_shipped_query_with_a_line(home):
    done = cli('query', '--list', env=local_env(home))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(library.shipped())
    assert all(len(line.split(None, 1)[1]) > 20 for line in lines)


def test_trends_table_is_aligned_and_shows_units(home):
    done = cli('query', 'trends', env=local_env(home))
    assert done.returncode == 0, done.stderr
    header, rule, *rows = done.stdout.splitlines()
    assert header.split()[:2] == ['day', 'cluster']
    assert 'check_perf_unit' not in header
    assert any(' MB/s' in row and 'StreamCheck' in row for row in rows)
    assert any(' Gb/s' in row and 'PerftestLoopback' in row for row in rows)
    # Columns line up: each column starts where its header starts.
    start = header.index('vm_sku')
    assert all(row[start - 2:start] == '  ' for row in rows)


def test_json_and_csv_for_scripts(home):
    as_json = cli('query', 'run_summary', '--json', env=local_env(home))
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert len(rows) == 2 * query_store.DAYS
    latest_east = next(r for r in rows if r['cluster'] == 'prod-eastus')
    assert latest_east['tests_failed'] == 1
    as_csv = cli('query', 'run_summary', '--csv', env=local_env(home))
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [r['session_id'] for r in table] == [r['session_id'] for r in rows]


def test_filters_from_the_command_line(home):
    done = cli('query', 'trends', '--json', '--cluster', 'prod-westeu',
               '--since', '2d', env=local_env(home))
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert rows and {r['cluster'] for r in rows} == {'prod-westeu'}
    oldest = min(dt.datetime.fromisoformat(r['day'].replace('Z', '+00:00'))
                 for r in rows)
    assert oldest >= (NOW - dt.timedelta(days=3))


def test_a_users_file_runs_and_an_unsupported_construct_is_named(home,
                                                                 tmp_path):
    mine = tmp_path / 'bad_nodes.kql'
    mine.write_text("clusterproof_results\n| where check_result == 'fail'\n"
                    '| mv-expand node = check_job_nodelist to typeof(string)\n'
                    '| distinct node\n| order by node asc\n')
    done = cli('query', str(mine), '--json', env=local_env(home))
    assert done.returncode == 0, done.stderr
    assert [r['node'] for r in json.loads(done.stdout)] == \
        ['hb-1', 'hb-2', 'hb-3', 'nd-3']
    unsupported = tmp_path / 'set_if.kql'
    unsupported.write_text('clusterproof_results\n| summarize '
                           "make_set_if(check_name, check_result == 'fail')\n")
    done = cli('query', str(unsupported), env=local_env(home))
    assert done.returncode == 1
    assert 'make_set_if' in done.stderr and 'Traceback' not in done.stderr


def test_unknown_query_and_bad_since_are_usage_errors(home):
    done = cli('query', 'no_such_query', env=local_env(home))
    assert done.returncode == 2 and 'shipped:' in done.stderr
    done = cli('query', 'trends', '--since', 'yesterday',
               env=local_env(home))
    assert done.returncode == 2 and '--since' in done.stderr


def test_the_same_query_in_log_analytics(home, fake_azure):
    env = cloud_env(home, fake_azure)
    cloud = cli('query', 'node_outliers', '--json', '--cluster',
                'prod-eastus', env=env)
    assert cloud.returncode == 0, cloud.stderr
    [(sent, timespan)] = fake_azure.queries
    # outliers only, unless --all: the same narrowing in both engines
    assert sent == library.compose(library.outliers_only(),
                                   library.Filters(cluster='prod-eastus'))
    assert timespan is None
    assert fake_azure.token_requests >= 1
    here = cli('query', 'node_outliers', '--json', '--cluster', 'prod-eastus',
               '--local', env=env)
    assert json.loads(cloud.stdout) == json.loads(here.stdout)
    assert any(r['outlier'] for r in json.loads(cloud.stdout))


def test_log_analytics_refusal_is_a_clear_error(home, fake_azure):
    env = cloud_env(home, fake_azure, workspace=False)
    done = cli('query', 'trends', '--workspace', 'not-this-workspace',
               env=env)
    assert done.returncode == 1
    assert 'Log Analytics' in done.stderr and '404' in done.stderr
    assert 'Traceback' not in done.stderr


def test_a_saved_function_by_name_in_log_analytics(home, fake_azure):
    env = cloud_env(home, fake_azure)
    fake_azure.answer_query = lambda query, timespan: [{'day': 'x'}]
    done = cli('query', 'trends', '--saved-function', '--json', env=env)
    assert done.returncode == 0, done.stderr
    assert fake_azure.queries == [('clusterproof_trends\n', None)]
    refused = cli('query', 'trends', '--saved-function', '--since', '1d',
                  env=env)
    assert refused.returncode == 2 and '--since' in refused.stderr
    local_only = cli('query', 'trends', '--saved-function',
                     env=local_env(home))
    assert local_only.returncode == 2 and 'workspace' in local_only.stderr


def test_a_torn_line_is_left_out_and_said(home):
    session = sorted((home / 'results').glob('*/*.jsonl'))[-1]
    with open(session, 'a') as fp:          # a writer killed mid-line
        fp.write('{"record_id": "torn", "check_perf_val')
    done = cli('query', 'results', '--json', env=local_env(home))
    assert done.returncode == 0, done.stderr
    assert 'torn' not in {r['record_id'] for r in json.loads(done.stdout)}
    assert '1 line(s) of the local store could not be read' in done.stderr
    (home / 'elsewhere').mkdir()
    clean = cli('query', 'trends', env=local_env(home / 'elsewhere'))
    assert clean.returncode == 0 and 'note' not in clean.stderr
