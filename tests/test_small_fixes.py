"""Smaller things a new user met: a missing reference is null everywhere,
sync --dry-run needs no Azure, empty answers say why, acceptance counts what
passed, and a failure without a node names no bad node."""
import json
import subprocess
import sys

from config.results.rows import builder
from scripts.acceptance import summary
from scripts.acceptance.verdicts import FAIL, NOT_MEASURED, PASS, Finding
from scripts.query import empty, library
from scripts.query.runner import Runner
from scripts.report import model
from tests.helpers import REPO, suite_env
from tests.test_records import perf_record

CLI = str(REPO / 'scripts' / 'clusterproof')


def cli(*args, env):
    return subprocess.run([sys.executable, CLI, *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_a_variable_without_reference_stores_null_not_zero():
    row = builder.row_from_log_record(perf_record(
        check_perf_ref=0, check_perf_lower_thres=None,
        check_perf_upper_thres=None), 'session-1')
    assert row['check_perf_result'] == 'no_reference'
    assert row['check_perf_ref'] is None


def write_rows(home, rows):
    day = home / 'results' / '2026-11-30'
    day.mkdir(parents=True)
    (day / '20261130T100000Z-0000aaaa.jsonl').write_text(
        ''.join(json.dumps(row) + '\n' for row in rows))


def old_row(**values):
    row = builder.row_from_log_record(perf_record(
        check_perf_lower_thres=None, check_perf_upper_thres=None), 's-old')
    row.update(session_id='20261130T100000Z-0000aaaa', **values)
    return row


def test_old_rows_with_zero_and_no_reference_read_as_no_reference(tmp_path):
    # rows stored before this fix kept ReFrame's 0
    write_rows(tmp_path, [old_row(check_perf_ref=0.0,
                                  check_perf_result='no_reference')])
    runner = Runner(results_dir=tmp_path / 'results')
    query = library.Query('q', '', 'clusterproof_results | project '
                          'check_perf_ref, check_perf_result\n')
    assert runner.run(query).records() == [
        {'check_perf_ref': None, 'check_perf_result': 'no_reference'}]
    compared = runner.run('compare_clusters').records()
    assert [r['reference'] for r in compared] == [None]


def test_an_empty_answer_says_why(tmp_path):
    outliers = library.resolve('node_outliers')
    assert empty.reason(Runner(results_dir=tmp_path / 'none'), outliers) == \
        'the local store holds no rows yet'
    write_rows(tmp_path, [old_row(check_perf_ref=500.0)])
    runner = Runner(results_dir=tmp_path / 'results')
    assert runner.run(outliers).rows == []
    assert empty.reason(runner, outliers).startswith(
        'no run measured a metric on 5 or more nodes')
    assert empty.reason(runner, library.resolve('trends')) is None


def test_sync_dry_run_without_azure_lists_the_backlog(tmp_path):
    home = tmp_path / 'home'
    write_rows(home, [old_row(), old_row(record_id='other')])
    result = cli('sync', '--dry-run', env=suite_env(home))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith('clusterproof sync: Azure Log Analytics is '
                               'not configured')
    # the hint names the resolved path, not $CLUSTERPROOF_HOME
    assert f'`source {home}/azure.env`' in lines[0]
    assert lines[1:] == [
        'clusterproof sync: would ship 2 row(s) of session '
        '20261130T100000Z-0000aaaa',
        'clusterproof sync: would ship 2 row(s) in all']
    shipping = cli('sync', env=suite_env(home))
    assert shipping.returncode == 2
    assert f'`source {home}/azure.env`' in shipping.stderr


def finding(check, verdict, metric=None, node='*', jobid='1'):
    return Finding(node=node, partition='local:default', check=check,
                   verdict=verdict, metric=metric, jobid=jobid)


def test_acceptance_lists_and_counts_what_passed():
    findings = [finding('HpccNode', 'no_reference', 'HPL_Tflops'),
                finding('HpccNode', 'informational', 'PTRANS_GBs'),
                finding('IorCheck', NOT_MEASURED, jobid=None),
                finding('HplCheck', FAIL, 'gflops', jobid='2'),
                finding('HplCheck', PASS, 'efficiency', jobid='2')]
    passes = summary.whole_partition_passes(findings)
    assert passes == [{'partition': 'local:default', 'check': 'HpccNode',
                       'results': 2}]
    counts = summary.check_counts(findings)
    assert counts == {PASS: 1, FAIL: 1, NOT_MEASURED: 1}
    table = summary.table_lines([], [], passes)
    assert table[1].split()[:7] == ['local:default', '(whole)', 'HpccNode',
                                    '-', '-', '-', 'pass']
    assert summary.count_line(summary.node_counts([]), counts) == (
        '0 node(s): 0 bad, 0 suspect, 0 not measured, 0 powered down, 0 '
        'good; 3 check result(s): 1 passed, 1 failed, 1 not measured')


def test_a_failure_without_a_node_names_no_bad_node():
    latest = [{'cluster': 'c', 'check_partition': 'p', 'node': node,
               'check_name': 'StreamCheck', 'check_fail_reason': 'low',
               'completed': '2026-11-30', 'check_result': 'fail'}
              for node in (model.NO_NODE, 'hb-1')]
    assert [b['node'] for b in model._bad_nodes(latest, [])] == ['hb-1']


def test_an_unsupported_construct_is_named_in_the_query_s_terms(tmp_path):
    home = tmp_path / 'home'
    write_rows(home, [old_row()])
    own = tmp_path / 'mine.kql'
    own.write_text('clusterproof_results | summarize s = make_set_if(test, '
                   'true)\n')
    result = cli('query', str(own), env=suite_env(home))
    assert result.returncode == 1
    assert 'cannot run the aggregate make_set_if. Rewrite that part, or ' \
        'run it in Log Analytics (--workspace)' in result.stderr
    assert 'translate/' not in result.stderr and 'wave' not in result.stderr


def test_setup_says_what_to_do_when_pip_fails(tmp_path):
    # A checkout whose requirements no index has: pip fails, setup says so
    (tmp_path / 'scripts').mkdir()
    (tmp_path / 'scripts' / 'setup.sh').write_text(
        (REPO / 'scripts' / 'setup.sh').read_text())
    (tmp_path / 'requirements.txt').write_text('no-such-package-cp==0.0.1\n')
    env = suite_env(tmp_path / 'home', {
        'PIP_INDEX_URL': 'http://127.0.0.1:9/simple', 'PIP_RETRIES': '0',
        'PIP_TIMEOUT': '2', 'PIP_CONFIG_FILE': '/dev/null',
        'PATH': '/usr/sbin:/usr/bin:/sbin:/bin'})
    result = subprocess.run(['bash', 'scripts/setup.sh'], cwd=tmp_path,
                            env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 1
    assert result.stderr.rstrip().splitlines()[-1] == (
        'setup: pip could not install requirements.txt into .venv (its error '
        'is above); check the network or the package index (PIP_INDEX_URL, a '
        'proxy), then run bash scripts/setup.sh again')
    assert not (tmp_path / '.venv' / '.requirements.sha256').exists()


def test_one_run_is_one_run():
    from scripts.report import svg
    assert svg.runs_text(1) == '1 run' and svg.runs_text(3) == '3 runs'


def test_saying_why_reads_the_store_no_more_when_the_query_read_rows(
        tmp_path, monkeypatch):
    """The count behind 'holds no rows yet' reuses the query's own reading
    of the store (at 1M rows a second, full reading cost 17 s)."""
    from scripts.query import local
    write_rows(tmp_path, [old_row(check_perf_ref=500.0)])
    runner = Runner(results_dir=tmp_path / 'results')
    reads = []
    real_connect = local.connect
    monkeypatch.setattr(local, 'connect', lambda *args, **kwargs: (
        reads.append(args), real_connect(*args, **kwargs))[1])
    regressions = library.resolve('regressions')
    runner.run(regressions)
    assert len(reads) == 1
    assert empty.reason(runner, regressions) is None
    assert len(reads) == 1
