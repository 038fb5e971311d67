"""`clusterproof baseline` over a 30-day store (tests/support/query_store.py, grown),
and the layer it writes judged beside the published references."""
import datetime as dt

import pytest
import yaml

from checks.common.reference_key import reference_key
from scripts.cli import main as cli
from scripts.comparison import baseline
from tests.support import query_store

NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
TRIAD_KEY = ('prod-eastus', 'StreamCheck', 'triad_bw|HB176rs_v4||1n|-', '')


@pytest.fixture(scope='module')
def month(tmp_path_factory):
    home = tmp_path_factory.mktemp('home')
    rows = query_store.build(home, now=NOW, days=30)
    return home, rows


def clusterproof(monkeypatch, home, *args):
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(home))
    monkeypatch.delenv('LOGS_WORKSPACE_ID', raising=False)
    monkeypatch.setattr('sys.argv', ['clusterproof', *args])
    return cli.main(list(args))


def test_outliers_are_removed_until_none_is_left():
    values = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 70.0, 140.0, 90.0]
    kept = baseline.robust_values(values)
    assert 70.0 not in kept and 140.0 not in kept
    # the second round drops what the first one's wider spread hid
    assert 90.0 not in kept
    assert baseline.robust_values([5.0, 5.0, 5.0]) == [5.0, 5.0, 5.0]


def test_the_key_is_the_rows_own_else_derived_the_same_way():
    row = {'check_perf_var': 'triad_bw', 'vm_sku': 'Standard_HB176rs_v4',
           'check_params': {'.pinned_nodes': 'n1', 'array_size': 20000000,
                            'num_threads': 2, 'measured_method': {'x': 1},
                            'no_verdict_reasons': ['method differs']},
           'check_job_nodelist': ['n1']}
    assert baseline.row_key(row) == reference_key(
        'triad_bw', 'HB176rs_v4', {'array_size': 20000000,
                                   'num_threads': 2}, 1)
    assert baseline.row_key({**row, 'reference_key': 'k|s||1n|-'}) == \
        'k|s||1n|-'
    # the embedded default has no SKU: its own system:partition
    local = {**row, 'vm_sku': None, 'check_system': 'local',
             'check_partition': 'default'}
    assert baseline.row_key(local).split('|')[1] == 'local:default'
    pair = {**row, 'check_job_nodelist': ['n1', 'n2']}
    assert baseline.row_key(pair).split('|')[3] == '2n'
    # Log Analytics may answer a dynamic column as its JSON text
    answered = {**pair, 'check_job_nodelist': '["n1", "n2"]',
                'check_params': '{"array_size": 20000000, "num_threads": 2}'}
    assert baseline.row_key(answered) == baseline.row_key(pair)


def test_baseline_over_thirty_days_writes_two_sided_entries_with_sources(
        month, tmp_path, monkeypatch, capsys):
    home, _ = month
    out = tmp_path / 'baselines'
    assert clusterproof(monkeypatch, home, 'baseline', '--since', '30d',
                        '--out', str(out)) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == \
        ['nccl.yaml', 'osu.yaml', 'stream.yaml']
    entries = baseline.read([out])
    triad = entries[TRIAD_KEY]
    # 5 nodes x 30 days, hb-3's failed last day left out
    nodes = len(query_store.HB_NODES)
    values = sorted(700000.0 + 4000.0 * i + 1000.0 * d for d in range(30)
                    for i in range(nodes) if (d, i) != (29, 2))
    assert triad.value == values[len(values) // 2]
    assert triad.lower == -triad.upper and triad.upper >= 0.10
    assert triad.source.startswith(f'site baseline: 30 runs on {nodes} nodes, ')
    assert f'median {triad.value:.6g} MB/s' in triad.source
    assert triad.command == 'clusterproof baseline --since 30d --out ' + \
        str(out)
    # OSU latency between hb-1 and hb-2: a two-node key
    assert ('prod-eastus', 'OsuPointToPoint',
            'latency|HB176rs_v4||2n|-', '') in entries
    # perftest ran on two days only: refused, and said so
    assert not any(e.test == 'PerftestLoopback' for e in entries.values())
    assert 'refused: 2 runs, --min-runs 5' in printed
    data = yaml.safe_load((out / 'stream.yaml').read_text())
    assert set(data['baselines'][0]) >= {'cluster', 'test', 'key', 'value',
                                         'lower', 'upper', 'unit', 'source',
                                         'command'}


def test_a_value_that_moved_is_shown_old_to_new(month, tmp_path,
                                                 monkeypatch, capsys):
    home, _ = month
    out = tmp_path / 'baselines'
    since = (NOW - dt.timedelta(days=30)).strftime('%Y-%m-%d')
    assert clusterproof(monkeypatch, home, 'baseline', '--since', since,
                        '--out', str(out)) == 0
    old = baseline.read([out])[TRIAD_KEY].value
    capsys.readouterr()
    # a week later only the last 10 days count: STREAM crept up 1000 MB/s
    # a day, and the table says so before the file changes
    assert clusterproof(monkeypatch, home, 'baseline', '--since', '10d',
                        '--out', str(out), '--dry-run') == 0
    printed = capsys.readouterr().out
    line = next(ln for ln in printed.splitlines()
                if 'StreamCheck' in ln and 'triad_bw' in ln)
    assert f'{old:.6g} -> ' in line
    assert baseline.read([out])[TRIAD_KEY].value == old   # dry run
    assert 'would be written (--dry-run)' in printed


def test_min_runs_refuses_short_histories(month, monkeypatch, capsys):
    home, _ = month
    assert clusterproof(monkeypatch, home, 'baseline', '--dry-run',
                        '--min-runs', '31') == 0
    printed = capsys.readouterr().out
    assert '0 of ' in printed and 'refused: 30 runs, --min-runs 31' in printed


def test_the_layer_judges_two_sided_and_by_cluster(month, tmp_path,
                                                   monkeypatch):
    home, rows = month
    out = tmp_path / 'baselines'
    assert clusterproof(monkeypatch, home, 'baseline', '--out',
                        str(out)) == 0
    monkeypatch.setenv(baseline.SETTING, str(out))
    layer = baseline.Layer.from_setting()
    row = next(r for r in rows if r['record_id'] == 'stream-10-hb-1')
    entry = layer.entry_for(row)
    low, high = entry.bounds()
    assert not baseline.judge(row, entry).fail
    slow = {**row, 'check_perf_value': low * 0.99}
    verdict = baseline.judge(slow, entry)
    assert verdict.fail and 'below the site baseline' in verdict.reason
    assert entry.source in verdict.reason
    fast = {**row, 'check_perf_value': high * 1.01}
    assert 'above the site baseline' in baseline.judge(fast, entry).reason
    # the same SKU and key on another cluster (the sandbox declares HBv4)
    assert layer.entry_for({**row, 'cluster': 'sandbox'}) is None


def test_usage_errors(month, monkeypatch, capsys):
    home, _ = month
    assert clusterproof(monkeypatch, home, 'baseline') == 2
    assert '--out DIR is needed' in capsys.readouterr().err


def test_workspace_gives_the_entries_the_local_store_gives(month, tmp_path,
                                                           fake_azure):
    # the loopback Log Analytics answers its query API by running the KQL
    # it receives on the same store (tests/query/test_query_cli.py's cloud_env)
    from tests.support.cli_runs import cli
    from tests.support.query_envs import cloud_env, local_env
    home, _ = month
    here, there = tmp_path / 'here', tmp_path / 'there'
    done = cli('baseline', '--since', '30d', '--out', str(here),
               env=local_env(home))
    assert done.returncode == 0, done.stderr
    env = cloud_env(home, fake_azure, workspace=False)
    done = cli('baseline', '--since', '30d', '--out', str(there),
               '--workspace', fake_azure.workspace_id, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    [(sent, timespan)] = fake_azure.queries
    # the shipped results query, its window (--since) in the KQL itself
    assert sent.startswith('// name: results - ') and timespan is None
    assert '| where completed >= datetime(' in sent
    assert fake_azure.token_requests >= 1

    def entries(directory):
        return {key: {**e.as_yaml(), 'command': None}
                for key, e in baseline.read([directory]).items()}
    assert entries(there) == entries(here)
    assert TRIAD_KEY in entries(there)
    assert baseline.read([there])[TRIAD_KEY].command.endswith(
        f'--workspace {fake_azure.workspace_id}')
