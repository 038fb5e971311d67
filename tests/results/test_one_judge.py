"""One judge, proven: with config/results/rows/judge.py's ``judged``
replaced by a sentinel that fails every value with a reason of its own,
every row a real ReFrame run stores carries the sentinel's verdict, basis
and reason, so no row gets its verdict anywhere else; and ReFrame's
performance stage fails the test with the sentinel's reason, so it asks
the same judge (checks/common/site_baseline_verdicts.py finds the module
the row builder uses, not a copy of its own). Without the sentinel the
same local run passes (tests/checks/test_site_baseline_run.py).

The judge is replaced inside ReFrame's own process: ReFrame imports the
configuration under a name of its own (``config@<hash>``), so the wrapper
below replaces ``judged`` in whichever module ends in
``results.rows.judge`` once the configuration is loaded.
"""
import os
import subprocess
import sys

from tests.support.helpers import (DATA, REPO, STANDINS, stored_rows,
                                   suite_env)

SENTINEL = 'sentinel-judge'
FAILED = 'the sentinel judge failed it'
JUDGED = ('fail', SENTINEL, FAILED)

WRAPPER = f'''
import sys

import reframe.core.config as config

load_config = config.load_config


def sentinel(values, baseline=None, notes=None, sample=None):
    values.update(check_perf_result='fail', verdict_basis={SENTINEL!r},
                  check_fail_reason={FAILED!r})
    return values


def loaded(*args, **kwargs):
    site = load_config(*args, **kwargs)
    for name, module in list(sys.modules.items()):
        if name.endswith('results.rows.judge'):
            module.judged = sentinel
        if name.endswith('results.handlers.records') and '--dry-run' in sys.argv:
            # store what a dry run's records would make, to read it
            module.is_dry_run = lambda record: False
    return site


config.load_config = loaded
from reframe.frontend.cli import main
sys.argv[0] = 'reframe'
main()
'''


def run_with_sentinel(tmp_path, *args, path=None):
    home = tmp_path / 'home'
    env = suite_env(home)
    if path:
        env['PATH'] = os.pathsep.join([str(path), env['PATH']])
    result = subprocess.run(
        [sys.executable, '-c', WRAPPER, '-C', str(REPO / 'config' /
                                                  'config.py'), *args,
         '--prefix', str(tmp_path / 'rfm')],
        env=env, cwd=str(REPO), capture_output=True, text=True, timeout=600)
    return result, stored_rows(home)


def judged(row) -> tuple:
    return (row['check_perf_result'], row['verdict_basis'],
            row['check_fail_reason'])


def test_a_real_local_run_is_judged_by_the_one_judge_stage_and_rows(
        tmp_path):
    # STREAM runs for real through ReFrame on local; its binary is the
    # checked stand-in (tests/support/standins/stream_c.exe replays a real
    # output after checking its OpenMP settings)
    result, rows = run_with_sentinel(
        tmp_path, '--system', 'local', '-c', 'checks/cpu/stream.py',
        '-n', '^StreamCheck$', '-r', path=STANDINS)
    # the performance stage failed the test as the judge said
    assert result.returncode != 0
    assert "failed during 'performance'" in result.stdout, result.stdout
    assert FAILED in result.stdout
    assert {row['check_perf_var'] for row in rows} >= {
        'copy_bw', 'scale_bw', 'add_bw', 'triad_bw'}
    assert {row['check_name'] for row in rows} == {'StreamCheck'}
    assert {judged(row) for row in rows} == {JUDGED}
    assert {row['check_result'] for row in rows} == {'fail'}


def test_every_row_of_an_nccl_dry_run_is_judged_by_the_one_judge(tmp_path):
    result, rows = run_with_sentinel(
        tmp_path, '--system', 'azure:ndv5', '-c', 'checks/gpu/nccl.py',
        '-n', '^NcclSingleNode', '--dry-run')
    # a dry run evaluates no value, but its performance stage runs: the
    # judge fails each case there too (the real one judges nothing)
    assert result.returncode != 0
    assert result.stdout.count("failed during 'performance'") == 5, \
        result.stdout + result.stderr
    # one row per collective and metric at least
    assert {row['check_name'].split()[0] for row in rows} == {
        'NcclSingleNode'}
    assert len(rows) >= 2 * 5
    assert {judged(row) for row in rows} == {JUDGED}


def test_every_ingested_row_is_judged_by_the_one_judge(monkeypatch):
    # `clusterproof ingest` makes rows without ReFrame: the same judge
    # decides them, with or without a reference to compare with
    from checks import parsers
    from checks.common.references import Reference
    from config.results.rows import judge
    from scripts.cli import ingest

    def sentinel(values, baseline=None, notes=None, sample=None):
        return {**values, 'check_perf_result': 'fail',
                'verdict_basis': SENTINEL, 'check_fail_reason': FAILED}
    monkeypatch.setattr(judge, 'judged', sentinel)
    text = (DATA / 'stream' / 'stream_c_omp2_20M.out').read_text()
    result = parsers.parse('stream', text)
    triad = Reference(1.0, -0.1, None, 'MB/s', 'a source')
    rows = ingest.rows_for(result, {'check_job_nodelist': ['n1']},
                           lambda metric: str(metric), {'triad_bw': triad},
                           {})
    assert len(rows) == len(result.metrics) >= 4
    assert {judged(row) for row in rows} == {JUDGED}
