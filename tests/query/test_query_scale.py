"""The local engine at scale: each record once (deduplicated at ingest, the
rows results.kql's own arg_max answers), the translation cached, memory
bounded, its spills in the cache folder."""
import datetime as dt
import json
import shutil

import duckdb
import duckdb_kql
import pytest

from scripts.query import index, library, local, memory, output
from scripts.query.runner import Runner
from scripts.report import model
from tests.support import query_store
from tests.support.cli_runs import cli
from tests.support.query_envs import local_env

NAMES = [name for name in library.shipped() if name != library.BASE_NAME]


def as_rows(result) -> list[dict]:
    return json.loads(output.as_json(result))


@pytest.fixture(scope='module')
def home(tmp_path_factory):
    """The query store, each file's modification time its last row's, as
    ReFrame leaves them."""
    home = tmp_path_factory.mktemp('scale')
    query_store.build(home)
    query_store.settle(home)
    return home


def everything(con, name, filters=None):
    """The rows of *name* the old way: every column of every file, the base
    (its arg_max deduplication included) composed in front of the query."""
    text = library.compose(library.resolve(name), filters)
    return as_rows(local.run(con, text, query_store.NOW))


# Each composed text is translated anew (about a second a query): two
# windows, the whole store and its last two days, hold the filter to it.
SINCE = [None, query_store.NOW - dt.timedelta(days=2)]


@pytest.mark.parametrize('since', SINCE, ids=['all', '2d'])
def test_every_query_answers_what_reading_everything_answers(home, since):
    filters = library.Filters(since=since)
    runner = Runner(results_dir=home / 'results', now=query_store.NOW,
                    filters=filters)
    runner.expect(*NAMES)
    con = local.connect(home / 'results')
    for name in NAMES:
        assert as_rows(runner.run(name)) == everything(con, name, filters), \
            name
    con.close()


def test_the_translation_is_cached_and_the_clock_bound_at_each_run(
        home, monkeypatch):
    con = local.connect(home / 'results')
    text = library.resolve('failures').text
    first = as_rows(local.run(con, text, query_store.NOW))
    assert first and list(index.folder(home / 'results').glob(
        '*.json'))

    def no_translation(*args, **kwargs):
        raise AssertionError('translated again')
    monkeypatch.setattr(duckdb_kql, 'to_sql', no_translation)
    assert as_rows(local.run(con, text, query_store.NOW)) == first
    # a week later no failure is within the query's 7 days
    later = query_store.NOW + dt.timedelta(days=8)
    assert as_rows(local.run(con, text, later)) == []


def test_node_outliers_shows_outliers_unless_all(home):
    env = local_env(home)
    outliers = cli('query', 'node_outliers', '--json', env=env)
    assert outliers.returncode == 0, outliers.stderr
    rows = json.loads(outliers.stdout)
    assert rows and all(r['outlier'] for r in rows)
    every = cli('query', 'node_outliers', '--all', '--json', env=env)
    assert len(json.loads(every.stdout)) > len(rows)
    wrong = cli('query', 'trends', '--all', env=env)
    assert wrong.returncode == 2 and 'node_outliers' in wrong.stderr


def _outlier(node, when, value):
    return {'cluster': 'c', 'check_partition': 'p', 'node': node,
            'device': '', 'test': 'StreamCheck', 'check_perf_var': 'triad_bw',
            'value': value, 'check_perf_unit': 'MB/s', 'peer_median': 100.0,
            'worse_pct': 20.0, 'peers': 4, 'robust_z': -4.0, 'outlier': True,
            'completed': dt.datetime(2026, 11, when,
                                     tzinfo=dt.timezone.utc)}


def test_bad_nodes_keep_each_finding_once_at_its_latest_run():
    found = model._bad_nodes([], [_outlier('n1', 3, 80.0),
                                  _outlier('n1', 5, 70.0),
                                  _outlier('n1', 4, 75.0),
                                  _outlier('n2', 4, 60.0)])
    assert [(b['node'], b['when'].day, b['earlier']) for b in found] == \
        [('n1', 5, 2), ('n2', 4, 0)]
    assert found[0]['detail'].startswith('70 MB/s')


def test_query_and_report_do_not_import_reframe(home):
    """Their fixed cost: the CLI imports the module of the command it runs
    alone, and the launcher finds ReFrame without importing it."""
    import subprocess
    import sys
    from tests.support.helpers import REPO
    probe = ('import runpy, sys; sys.argv = ["clusterproof", "query", '
             '"--list"]\ntry:\n    runpy.run_path("scripts/clusterproof", '
             'run_name="__main__")\nexcept SystemExit:\n    pass\n'
             'print(sorted(m for m in sys.modules if m.startswith('
             '"reframe")))')
    done = subprocess.run([sys.executable, '-c', probe], cwd=str(REPO),
                          env=local_env(home), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert 'trends' in done.stdout
    assert done.stdout.strip().splitlines()[-1] == '[]'


def test_a_cached_translation_does_not_import_the_translator(home):
    """duckdb-kql's parser costs ~0.25 s of every command: a query whose
    translation is cached never imports it."""
    import subprocess
    import sys
    from tests.support.helpers import REPO
    # a file of the user's own: set-up translated the shipped queries
    mine = home / 'failures-of-mine.kql'
    mine.write_text('// mine\n' + library.resolve('failures').text)
    probe = ('import runpy, sys; sys.argv = ["clusterproof", "query", '
             f'"{mine}", "--json"]\ntry:\n    runpy.run_path('
             '"scripts/clusterproof", run_name="__main__")\nexcept '
             'SystemExit:\n    pass\nprint("duckdb_kql" in sys.modules)')
    shutil.rmtree(index.folder(home / 'results'), ignore_errors=True)
    runs = [subprocess.run([sys.executable, '-c', probe], cwd=str(REPO),
                           env=local_env(home), capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    first, again = (r.stdout.strip().splitlines() for r in runs)
    assert first[-1] == 'True' and again[-1] == 'False'
    assert first[:-1] == again[:-1]            # the same rows


def test_memory_is_bounded_and_spills_beside_the_store(home, monkeypatch):
    monkeypatch.setenv(local.MEMORY_VARIABLE, '300MB')
    con = local.connect(home / 'results')
    limit, spill = con.execute(
        "SELECT current_setting('memory_limit'), "
        "current_setting('temp_directory')").fetchall()[0]
    assert limit.replace(' ', '') in ('286.1MiB', '300.0MB', '300MB')
    assert spill == str(home / 'cache' / 'query' / 'spill')


@pytest.mark.parametrize('limit, expected', [
    ('640MB', 640 * 1000 ** 2), ('2GB', 2 * 1000 ** 3), ('1GiB', 2 ** 30),
    ('1.5 gb', 1500 * 1000 ** 2), ('512MiB', 512 * 2 ** 20),
    ('100KB', 100_000), ('2TiB', 2 * 2 ** 40), ('700000000b', 700_000_000),
    # DuckDB's letters and names for the 1000^i units (Slurm's --mem=4G)
    ('4G', 4 * 1000 ** 3), ('640M', 640 * 1000 ** 2), ('1gigabyte', 1000 ** 3),
    ('3 megabytes', 3 * 1000 ** 2), ('2048k', 2_048_000), ('1t', 1000 ** 4),
    ('90000000 bytes', 90_000_000)])
def test_a_memory_limit_reads_as_duckdb_reads_it(limit, expected):
    """The bytes clusterproof counts threads from are those DuckDB holds to:
    its own formatting of the limit set is that of the bytes read."""
    assert memory.memory_bytes(limit) == expected
    con = duckdb.connect()
    formatted = con.execute(f'SELECT format_bytes({expected})').fetchone()[0]
    con.execute(f"SET memory_limit = '{limit}'")
    assert con.execute("SELECT current_setting('memory_limit')"
                       ).fetchone()[0] == formatted


def test_threads_follow_the_memory_limit():
    gib = 2 ** 30
    assert memory.threads_for(memory.memory_bytes('640MB'), 16) == 2
    assert memory.threads_for(memory.memory_bytes('640MB'), 1) == 1
    assert memory.threads_for(memory.memory_bytes('639MB'), 16) == 1
    assert memory.threads_for(memory.memory_bytes('300MB'), 16) == 1
    assert memory.threads_for(memory.memory_bytes('4GiB'), 16) == 13
    assert memory.threads_for(1000 * gib, 8) == 8


@pytest.mark.parametrize('limit, said', [
    ('abc', 'Memory must have a number'),      # DuckDB's own words
    ('1000000000', 'Unknown unit for memory'),
    ('10%', 'give a number and a unit, e.g. 640MB'),   # DuckDB takes it
    ('none', 'give a number and a unit, e.g. 640MB')])
def test_a_memory_limit_not_read_says_so(home, monkeypatch, limit, said):
    monkeypatch.setenv(local.MEMORY_VARIABLE, limit)
    with pytest.raises(local.QueryFailed) as refused:
        local.connect(home / 'results')
    assert str(refused.value).startswith(f'{local.MEMORY_VARIABLE}={limit}: ')
    assert said in str(refused.value)


class Statements:
    """A real DuckDB connection that keeps the SQL it is given."""

    def __init__(self, con):
        self.con, self.seen = con, []

    def execute(self, sql, *args):
        self.seen.append(sql)
        return self.con.execute(sql, *args)

    def sql(self, sql, *args, **kwargs):
        self.seen.append(sql)
        return self.con.sql(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.con, name)


def test_a_query_asks_its_connection_for_nothing_but_itself(home):
    """A translated query runs itself on the connection, once, and nothing
    else: the schema it is translated for is the translator's own
    connection's (translator.py)."""
    con = local.connect(home / 'results')
    text = 'clusterproof_results | count'
    expected = local.run(con, text).rows           # translated and cached
    watched = Statements(con)
    assert local.run(watched, text).rows == expected
    seen = watched.seen
    assert len(seen) == 1       # its rows, their columns from its cursor
    assert 'clusterproof_results' in seen[0]
