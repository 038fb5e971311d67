"""A plain ReFrame run judged against the site baseline when its rows are
written (checks/common/site_baseline_verdicts.py): real ReFrame on the `local`
system (and on the sandbox Slurm, whose partition has a published floor, for
both bases at once), STREAM's replay stand-in printing real outputs, a
baseline made by `clusterproof baseline` from a first run's rows."""
import subprocess
import sys

import pytest

from config.results.rows import judge
from tests.support.helpers import (DATA, REPO, STANDINS, run_reframe,
                                   stored_rows, suite_env)

STREAM = DATA / 'stream'
RUN = ['-c', 'checks/cpu/stream.py', '-n', '^StreamCheck$', '-r',
       '-S', 'num_threads=2', '-S', 'array_size=20000000']


def stream_run(home, tmp_path, output=None, baselines=None, system='local',
               env=None):
    extra = {**(env or {}), 'PATH': f'{STANDINS}:{suite_env(home)["PATH"]}'}
    if output:
        extra['CLUSTERPROOF_REPLAY_STREAM_C_EXE'] = str(STREAM / output)
    if baselines:
        extra['CLUSTERPROOF_BASELINES'] = str(baselines)
    before = {r['record_id'] for r in stored_rows(home)}
    result = run_reframe('--system', system, *RUN,
                         '--prefix', str(tmp_path / 'rfm'),
                         env=suite_env(home, extra), cwd=str(REPO),
                         timeout=300)
    rows = {r['check_perf_var']: r for r in stored_rows(home)
            if r['record_id'] not in before
            and r['facility'] == 'reframe'}
    return result, rows


def make_baseline(home, out):
    made = subprocess.run(
        [sys.executable, str(REPO / 'scripts' / 'clusterproof'), 'baseline',
         '--min-runs', '1', '--out', str(out)], env=suite_env(home),
        cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    return out


@pytest.fixture(scope='module')
def baselines(tmp_path_factory):
    """A first run (the replayed 12369.6 MB/s triad), then its baseline."""
    tmp_path = tmp_path_factory.mktemp('first')
    home = tmp_path / 'home'
    result, rows = stream_run(home, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert rows['triad_bw']['check_perf_result'] == 'no_reference'
    assert rows['triad_bw']['verdict_basis'] is None
    return make_baseline(home, tmp_path / 'baselines')


def test_a_run_below_the_site_baseline_fails_naming_the_basis(
        baselines, tmp_path):
    result, rows = stream_run(tmp_path / 'home', tmp_path,
                              'stream_c_omp2_20M_busy_vm.out', baselines)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert '[     FAIL ] (1/1) StreamCheck' in out
    assert ("site baseline: triad_bw 10382.9 MB/s: 16.1% below the site "
            "baseline 12,369.6 MB/s (bound 11,132.6 MB/s)") in out
    triad = rows['triad_bw']
    assert (triad['check_perf_result'], triad['verdict_basis'],
            triad['check_result']) == ('fail', 'site_baseline', 'fail')
    assert 'site baseline: triad_bw 10382.9 MB/s: 16.1% below' in \
        triad['check_fail_reason']
    # what it was judged against: the baseline, its bounds and its source
    assert (triad['check_perf_ref'], triad['check_perf_lower_thres'],
            triad['check_perf_upper_thres']) == (12369.6, -0.1, 0.1)
    assert triad['reference_source'].startswith(
        'site baseline: 1 runs on 1 nodes, ')
    assert {r['verdict_basis'] for r in rows.values()} == {'site_baseline'}


def test_a_run_far_above_the_site_baseline_fails_too(baselines, tmp_path):
    result, rows = stream_run(tmp_path / 'home', tmp_path,
                              'stream_c_omp2_20M_busy_vm_high.out', baselines)
    assert result.returncode != 0, result.stdout + result.stderr
    triad = rows['triad_bw']
    assert triad['check_perf_value'] == 21682.3
    assert triad['check_perf_result'] == 'fail'
    assert 'above the site baseline 12,369.6 MB/s' in \
        triad['check_fail_reason']


def test_a_run_inside_the_site_baseline_passes_on_it(baselines, tmp_path):
    result, rows = stream_run(tmp_path / 'home', tmp_path,
                              baselines=baselines)
    assert result.returncode == 0, result.stdout + result.stderr
    assert {(r['check_perf_result'], r['verdict_basis'])
            for r in rows.values()} == {('pass', 'site_baseline')}


def test_a_run_with_no_baseline_entry_keeps_no_reference(baselines,
                                                         tmp_path):
    # another array size: another reference key, so no entry judges it
    home = tmp_path / 'home'
    extra = {'PATH': f'{STANDINS}:{suite_env(home)["PATH"]}',
             'CLUSTERPROOF_BASELINES': str(baselines),
             'CLUSTERPROOF_REPLAY_STREAM_C_EXE':
                 str(STREAM / 'stream_c_omp2_10M.out')}
    args = ['--system', 'local', '-c', 'checks/cpu/stream.py', '-n',
            '^StreamCheck$', '-r', '-S', 'num_threads=2',
            '-S', 'array_size=10000000', '--prefix', str(tmp_path / 'rfm')]
    result = run_reframe(*args, env=suite_env(home, extra), cwd=str(REPO),
                         timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [r for r in stored_rows(home) if r['facility'] == 'reframe']
    assert rows and {(r['check_perf_result'], r['verdict_basis'])
                     for r in rows} == {('no_reference', None)}


def verdict(fail, reason='site baseline: triad_bw 1 MB/s: 90.0% below'):
    return {'fail': fail, 'reason': reason if fail else '', 'value': 10.0,
            'lower': -0.1, 'upper': 0.1, 'source': 'site baseline: 30 runs'}


def published(result, reason=None):
    return {'check_perf_result': result, 'check_fail_reason': reason,
            'check_perf_ref': 8.0, 'check_perf_lower_thres': -0.2,
            'check_perf_upper_thres': None, 'reference_source': 'Azure'}


def test_both_bases_are_checked_and_published_wins_the_label():
    both = judge.with_site_baseline(
        published('fail', 'performance error: failed to meet reference(s): '
                  'triad_bw=1'), verdict(True))
    assert (both['check_perf_result'], both['verdict_basis']) == \
        ('fail', 'published')
    assert both['check_fail_reason'] == (
        'performance error: failed to meet reference(s): triad_bw=1; '
        'site baseline: triad_bw 1 MB/s: 90.0% below')
    assert both['check_perf_ref'] == 8.0        # the published reference
    only_baseline = judge.with_site_baseline(published('pass'),
                                               verdict(True))
    assert (only_baseline['check_perf_result'],
            only_baseline['verdict_basis']) == ('fail', 'site_baseline')
    only_published = judge.with_site_baseline(published('fail', 'x'),
                                                verdict(False))
    assert (only_published['check_perf_result'],
            only_published['verdict_basis'],
            only_published['check_fail_reason']) == ('fail', 'published', 'x')
    assert judge.with_site_baseline(published('pass'), verdict(False))[
        'verdict_basis'] == 'published'
    shown = judge.with_site_baseline(published('informational'), None)
    assert (shown['check_perf_result'], shown.get('verdict_basis')) == \
        ('informational', None)


def test_a_file_that_is_no_baseline_fails_the_test_naming_it(tmp_path):
    broken = tmp_path / 'baselines'
    broken.mkdir()
    (broken / 'stream.yaml').write_text('baselines: [1, 2\n')
    result, rows = stream_run(tmp_path / 'home', tmp_path, baselines=broken)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert (f'performance error: site baseline {broken / "stream.yaml"}: '
            'not a baseline file') in out
    assert 'Traceback' not in out
    # the measurement is kept, judged by nothing
    assert {r['check_perf_result'] for r in rows.values()} == \
        {'no_reference'}


def test_both_bases_fail_on_the_sandbox_and_the_row_says_both(
        slurm_sandbox, tmp_path):
    # the sandbox's hbv4 declares HBv4, with the sandbox's published floor
    # of 8000 MB/s (tests/support/data/acceptance/references): a first run passes
    # it, its baseline is made, and a throttled run fails both
    env = {**slurm_sandbox.env, 'CLUSTERPROOF_REFERENCES': str(
        DATA / 'acceptance' / 'references')}
    home = tmp_path / 'home'
    result, rows = stream_run(home, tmp_path / 'first', system='sandbox:hbv4',
                              env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (rows['triad_bw']['check_perf_result'],
            rows['triad_bw']['verdict_basis']) == ('pass', 'published')
    out = make_baseline(home, tmp_path / 'baselines')
    result, rows = stream_run(home, tmp_path / 'second',
                              'stream_c_omp2_20M_cpu_quota_10pct.out', out,
                              system='sandbox:hbv4', env=env)
    assert result.returncode != 0, result.stdout + result.stderr
    triad = rows['triad_bw']
    assert (triad['check_perf_value'], triad['check_perf_result'],
            triad['verdict_basis']) == (1190.4, 'fail', 'published')
    reason = triad['check_fail_reason']
    assert 'failed to meet reference' in reason
    assert ('site baseline: triad_bw 1190.4 MB/s: 90.4% below the site '
            'baseline 12,369.6 MB/s') in reason
    # what it was judged against stays the published floor
    assert triad['check_perf_ref'] == 8000
