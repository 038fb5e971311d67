"""Acceptance judges every node against its peers, for real on the
five-node sandbox Slurm, with no reference configured: one node's STREAM
stand-in replays a real output 16% below the others; then every node
replays the same failure (a setup error), which is the partition's; then
a site baseline built from one run judges the next, both ways."""
import re
import subprocess
import sys
from pathlib import Path

from scripts.query.runner import Runner
from tests.support.acceptance_runs import (BUSY_STREAM, NODES,
                                           ONE_THREAD_STREAM, SANDBOX_METHOD,
                                           STREAM_ONLY, acceptance, expected,
                                           no_references, node_state, stored,
                                           verdict_of)
from tests.support.helpers import DATA, REPO

PEERS = len(NODES) - 1

ARGS = ['--system', 'sandbox', '--partition', 'hbv4', *STREAM_ONLY]


def test_a_node_below_its_peers_fails_on_basis_peers(sandbox_env):
    env = {**no_references(sandbox_env),
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N3': str(BUSY_STREAM)}
    result, summary = acceptance(env, *ARGS, '--drain', '--dry-run',
                                 *SANDBOX_METHOD)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert verdict_of(summary) == expected('good', {'sb-n3': 'bad'})
    assert re.search(r"^sb-n3 +StreamCheck +triad_bw +10382\.9 MB/s +12369\.6 "
                     rf"MB/s +bad +peers: 16\.1% below the {PEERS} peers' "
                     r"median 12,369\.6 MB/s, robust z -3\.2 \(limit 1\.6 "
                     r"for 1 judged value, spread 5%: 4 peers and no site "
                     r"baseline\)$", out, re.M), out
    assert re.search(r"^would run: scontrol update nodename=sb-n3 "
                     r"state=drain .*StreamCheck triad_bw=10382.9 MB/s "
                     r"peers' median 12369.6 MB/s", out, re.M), out
    bad = next(n for n in summary['nodes'] if n['node'] == 'sb-n3')
    assert {f['basis'] for f in bad['findings'] if f['verdict'] == 'fail'} \
        == {'peers'}
    # the triad judges a node; copy, scale and add are recorded only
    # (scripts/comparison/metrics.py)
    assert {f['metric'] for f in bad['findings'] if f['verdict'] == 'fail'} \
        == {'triad_bw'}

    # stored rows never change: the verdicts are rows of their own
    rows = stored(env)
    measured = {r['record_id']: r for r in rows
                if r['facility'] == 'reframe'}
    assert {r['check_perf_result'] for r in measured.values()} == \
        {'informational'}
    verdict_rows = [r for r in rows if r['judged_record_id']]
    # sb-n3's triad (its primary metric), and again for its confirmation
    # (--confirm 1, the default): measured again in a job of its own,
    # beside two good nodes, it fails against the same peers
    assert len(verdict_rows) == 2
    again = [r for r in verdict_rows if r['check_fail_reason'].startswith(
        'measured again beside its controls (their median ')]
    assert len(again) == 1 and again[0]['judged_record_id'] != next(
        r['judged_record_id'] for r in verdict_rows if r not in again)
    assert {f['node'] for f in summary['apart']['confirmed']} == {'sb-n3'}
    for row in verdict_rows:
        judged = measured[row['judged_record_id']]
        assert row['facility'] == 'clusterproof-acceptance'
        assert row['verdict_basis'] == 'peers'
        assert row['check_perf_result'] == 'fail'
        assert row['check_perf_var'] == judged['check_perf_var']
        assert row['check_job_nodelist'] == judged['check_job_nodelist'] \
            == ['sb-n3']
        assert row['check_perf_value'] is None
        assert row['check_perf_ref'] == next(
            f['reference'] for f in bad['findings']
            if f['metric'] == row['check_perf_var'] and f['basis'] == 'peers')
    failed = {r['judged_record_id'] for r in verdict_rows if r not in again}

    # node_outliers on the same store: the slow node (pins stripped), the
    # same rows as the peer verdicts
    runner = Runner(results_dir=Path(env['CLUSTERPROOF_HOME']) / 'results')
    outliers = runner.run('node_outliers').records()
    assert {r['record_id'] for r in outliers if r['outlier']} == failed
    assert {r['variant'] for r in outliers} == {'StreamCheck'}
    assert all(r['peers'] == PEERS for r in outliers)
    latest = {r['node']: r for r in runner.run('latest_by_node').records()}
    assert latest['sb-n3']['check_result'] == 'fail'
    assert latest['sb-n3']['verdict_basis'] == 'peers'
    assert f"below the {PEERS} peers' median" in \
        latest['sb-n3']['check_fail_reason']
    assert latest['sb-n1']['check_result'] == 'pass'
    summary_rows = runner.run('run_summary').records()
    assert ['peers'] in [r['failed_on'] for r in summary_rows]
    assert node_state('sb-n3') == 'idle'


def test_the_same_failure_on_every_node_is_the_partitions(sandbox_env):
    # a setup error every node shares: STREAM runs one thread where the
    # test asked for two (here: every node replays a one-thread output)
    env = {**no_references(sandbox_env),
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE': str(ONE_THREAD_STREAM)}
    result, summary = acceptance(env, *ARGS, '--drain', *SANDBOX_METHOD)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert verdict_of(summary) == {n: 'good' for n in NODES}
    [shared] = summary['partition_findings']
    assert shared['partition'] == 'sandbox:hbv4'
    assert shared['reason'] == (
        f'configuration or software ({len(NODES)} of {len(NODES)} nodes): '
        'sanity error: wrong '
        'thread count: STREAM counted 1 OpenMP threads, the test asked for 2')
    assert re.search(r'^sandbox:hbv4 \(whole\) +StreamCheck .* fail +'
                     rf'configuration or software \({len(NODES)} of '
                     rf'{len(NODES)} nodes\)', out, re.M)
    assert 'drained' not in out and summary['drain'] == []
    assert [node_state(n) for n in NODES] == ['idle'] * len(NODES)
    rows = [r for r in stored(env) if r['facility'] ==
            'clusterproof-acceptance']
    assert [(r['check_result'], r['check_job_nodelist']) for r in rows] == \
        [('fail', [])]
    assert rows[0]['check_fail_reason'] == shared['reason']
    # the measured rows: each node's own, as one-node jobs write them (one
    # batch job, in which no node passed)
    measured = [r for r in stored(env) if r['facility'] == 'reframe']
    assert sorted((r['check_job_nodelist'], r['check_perf_var'])
                  for r in measured) == sorted(
        ([n], m) for n in NODES
        for m in ('copy_bw', 'scale_bw', 'add_bw', 'triad_bw'))
    assert {(r['check_result'], r['check_perf_value'], r['check_fail_reason'])
            for r in measured} == {('fail', None, (
                'sanity error: wrong thread count: STREAM counted 1 OpenMP '
                'threads, the test asked for 2'))}


HIGH_STREAM = DATA / 'stream' / 'stream_c_omp2_20M_busy_vm_high.out'


def test_a_site_baseline_judges_the_next_run_both_ways(sandbox_env,
                                                        tmp_path):
    env = no_references(sandbox_env)
    result, _ = acceptance(env, *ARGS, *SANDBOX_METHOD)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / 'baselines'
    made = subprocess.run(
        [sys.executable, str(REPO / 'scripts' / 'clusterproof'), 'baseline',
         '--min-runs', '1', '--out', str(out)], env=env, cwd=str(REPO),
        capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    # keyed by the reference key the rows were looked up under
    [key] = {r['reference_key'] for r in stored(env)
             if r['check_perf_var'] == 'triad_bw'}
    assert key.startswith('triad_bw|HB176rs_v4|array_size=20000000,')
    assert re.search(rf'^sandbox +StreamCheck +{re.escape(key)} +- +'
                     rf'12369\.6 MB/s +11132\.6\.\.13606\.6 +1 +{len(NODES)} '
                     r'+new$',
                     made.stdout, re.M), made.stdout
    assert 'health' not in made.stdout

    # the next run: one node 16% low, one 75% above (another real run of
    # the same binary); too few peers (--min-peers one more than there
    # are), so only the baseline can tell
    env = {**env, 'CLUSTERPROOF_BASELINES': str(out),
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N3': str(BUSY_STREAM),
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N2': str(HIGH_STREAM)}
    result, summary = acceptance(env, *ARGS, '--min-peers', str(len(NODES)),
                                 *SANDBOX_METHOD)
    out_text = result.stdout
    assert result.returncode == 1, out_text + result.stderr
    assert verdict_of(summary) == expected('good', {'sb-n2': 'bad',
                                                    'sb-n3': 'bad'})
    assert re.search(r'^sb-n3 +StreamCheck +triad_bw +10382\.9 MB/s +'
                     r'12369\.6 MB/s +bad +site baseline: 16\.1% below the '
                     r'site baseline 12,369\.6 MB/s \(bound 11,132\.6 MB/s; '
                     rf'site baseline: 1 runs on {len(NODES)} nodes, ',
                     out_text, re.M), \
        out_text
    assert re.search(r'^sb-n2 +StreamCheck +triad_bw +21682\.3 MB/s .* '
                     r'above the site baseline 12,369\.6 MB/s', out_text,
                     re.M), out_text
    bases = {f['basis'] for n in summary['nodes'] for f in n['findings']
             if f['verdict'] == 'fail'}
    assert bases == {'site_baseline'}
    # the ReFrame run judged its rows against the baseline as it wrote
    # them (CLUSTERPROOF_BASELINES reaches it): they carry the verdict, and
    # acceptance adds no verdict row for it
    rows = stored(env)
    assert not [r for r in rows if r['judged_record_id']
                and r['session_id'] == summary['session_id']]
    failed = [r for r in rows if r['check_perf_result'] == 'fail'
              and r['facility'] == 'reframe']
    assert {r['verdict_basis'] for r in failed} == {'site_baseline'}
    assert sorted({r['check_job_nodelist'][0] for r in failed}) == \
        ['sb-n2', 'sb-n3']
    assert all('site baseline: ' in r['check_fail_reason'] for r in failed)


def test_confirm_blames_only_a_node_that_fails_every_attempt(sandbox_env,
                                                             tmp_path):
    # sb-n3 is slow once, then like the others; sb-n1 stays slow
    state = tmp_path / 'standin-state'
    state.mkdir()
    env = {**no_references(sandbox_env),
           'CLUSTERPROOF_STANDIN_STATE': str(state),
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N3':
               f'{BUSY_STREAM}:{DATA / "stream" / "stream_c_omp2_20M.out"}',
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N1':
               f'{BUSY_STREAM}:{BUSY_STREAM}'}
    result, summary = acceptance(env, *ARGS, '--confirm', '2',
                                 *SANDBOX_METHOD)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    # sb-n3's flag did not repeat: flaky, not bad (and not good either)
    assert verdict_of(summary) == expected('good', {'sb-n1': 'bad',
                                                    'sb-n3': 'flaky'})
    assert 'confirming 2 node(s) of sandbox:hbv4 (attempt 1 of 2): ' \
        'StreamCheck' in out
    assert 'confirming 1 node(s) of sandbox:hbv4 (attempt 2 of 2)' in out
    by_node = {n['node']: n for n in summary['nodes']}
    n3 = [f for f in by_node['sb-n3']['findings'] if f['verdict'] == 'fail']
    assert {f['metric'] for f in n3} == {'triad_bw'}
    # measured again beside two good nodes (controls), whose median now is
    # the one they measured first (they replay the same output)
    assert 'beside sb-n2, sb-n4 (controls: what their peers measure now)' \
        in out
    assert all(re.fullmatch(r'pass \([\d.]+, its controls [\d.]+\)',
                            f['confirmations'][0]) and
               len(f['confirmations']) == 1 and
               f['set_aside'] == 'passed when measured again' for f in n3)
    n1 = [f for f in by_node['sb-n1']['findings'] if f['verdict'] == 'fail']
    triad = next(f for f in n1 if f['metric'] == 'triad_bw')
    assert [c.split(',')[0] for c in triad['confirmations']] == \
        ['fail (peers: 10382.9'] * 2
    assert triad['set_aside'] == ''
    assert re.search(r'^sb-n3 +StreamCheck +triad_bw .* flaky +passed when '
                     r"measured again; first: peers: 16\.1% below", out,
                     re.M), out
    assert re.search(r'^flaky \(failed once, passed when measured again: '
                     r'never drained or reported\): 1 finding\(s\)$', out,
                     re.M), out
    assert re.search(r'^confirming cost [\d.]+ node-minutes: 4 node\(s\) '
                     r'measured again, 2 session\(s\)$', out, re.M), out
    assert {f['node'] for f in summary['apart']['flaky']} == {'sb-n3'}
    assert {f['node'] for f in summary['apart']['confirmed']} == {'sb-n1'}
    assert summary['confirmation']['sessions'] == 2
    assert summary['counts']['nodes']['flaky'] == 1
    # acceptance's own verdict rows say so; the judged rows never change
    flaky_rows = [r for r in stored(env) if r['judged_record_id'] and
                  r['check_perf_result'] == 'flaky']
    assert [r['check_perf_var'] for r in flaky_rows] == ['triad_bw']
    assert all(r['check_job_nodelist'] == ['sb-n3'] for r in flaky_rows)
    assert (state / 'STREAM_C_EXE-SB_N3.runs').read_text() == '2'


def test_a_suspect_pair_re_run_with_a_good_partner_blames_the_right_node(
        sandbox_env, tmp_path):
    # sb-n2's port flaps: its HCA is missing on its first and third runs.
    # Around the ring it fails with sb-n1 and passes with sb-n3: sb-n1 and
    # sb-n2 are suspect; each is then paired with a good node, and only
    # sb-n2 fails again.
    from tests.support.acceptance_runs import (PAIR_REFRAME_ARGS,
                                               PERFTEST_PAIR_ONLY)
    state = tmp_path / 'standin-state'
    state.mkdir()
    env = {**sandbox_env, 'CLUSTERPROOF_STANDIN_STATE': str(state),
           'CLUSTERPROOF_STANDIN_HCAS_SB_N2': 'mlx5_ib1:mlx5_ib0:mlx5_ib1'}
    result, summary = acceptance(env, '--system', 'sandbox', '--partition',
                                 'hbv4', *PERFTEST_PAIR_ONLY,
                                 *PAIR_REFRAME_ARGS)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert re.search(r'^re-pairing 1 suspect pair\(s\) of sandbox:hbv4 with '
                     r'a good partner: sb-n1,sb-n3, sb-n2,sb-n3$', out,
                     re.M), out
    # the ring's other four pairs measured bandwidths no reference judges,
    # and four pairs are too few peers (at least five are needed): those
    # nodes are not judged
    assert verdict_of(summary) == expected('not_judged', {'sb-n2': 'bad'})
    bad = next(n for n in summary['nodes'] if n['node'] == 'sb-n2')
    assert {f['partner'] for f in bad['findings']
            if f['verdict'] == 'fail'} == {'sb-n1', 'sb-n3'}
    # two ring runs, the re-pair, and the confirmation (--confirm 1, the
    # default: its HCA is still missing, so it stays bad)
    assert re.search(r'^confirming 1 node\(s\) of sandbox:hbv4 with a good '
                     r'partner \(attempt 1\): ', out, re.M), out
    assert (state / 'perftest-SB_N2.runs').read_text() == '4'


def test_confirm_re_runs_a_node_bad_from_pairs_with_a_good_partner(
        sandbox_env, tmp_path):
    # sb-n2's HCA is missing on both its ring runs (with sb-n1 and sb-n3:
    # bad from pairs), then back: with a good partner it passes, and is
    # flaky (its partners' side is set aside, and they are good); a node
    # whose HCA stays missing fails again, and stays bad.
    from tests.support.acceptance_runs import (PAIR_REFRAME_ARGS,
                                               PERFTEST_PAIR_ONLY)
    args = ['--system', 'sandbox', '--partition', 'hbv4',
            *PERFTEST_PAIR_ONLY, '--confirm', '1', *PAIR_REFRAME_ARGS]
    for hcas, verdict in (('mlx5_ib1:mlx5_ib1:mlx5_ib0', 'flaky'),
                          ('mlx5_ib1:mlx5_ib1:mlx5_ib1', 'bad')):
        state = tmp_path / f'state-{verdict}'
        state.mkdir()
        env = {**sandbox_env, 'CLUSTERPROOF_STANDIN_STATE': str(state),
               'CLUSTERPROOF_STANDIN_HCAS_SB_N2': hcas}
        result, summary = acceptance(env, *args)
        out = result.stdout
        assert result.returncode == (0 if verdict == 'flaky' else 1), \
            out + result.stderr
        pair = re.search(r'^confirming 1 node\(s\) of sandbox:hbv4 with a '
                         r'good partner \(attempt 1\): (sb-n\d,sb-n\d)$',
                         out, re.M).group(1).split(',')
        # a partner it did not fail with
        assert 'sb-n2' in pair and not {'sb-n1', 'sb-n3'} & set(pair)
        # three pairs of the ring measured: too few peers, and no reference
        assert verdict_of(summary) == expected('not_judged',
                                               {'sb-n2': verdict})
        mine = [f for n in summary['nodes'] for f in n['findings']
                if n['node'] == 'sb-n2' and f['verdict'] == 'fail']
        assert {f['partner'] for f in mine} == {'sb-n1', 'sb-n3'}
        assert {tuple(f['confirmations']) for f in mine} == {
            ('pass',) if verdict == 'flaky' else ('fail',)}
        assert all(bool(f['set_aside']) == (verdict == 'flaky')
                   for f in mine)
        # two ring runs and the confirmation
        assert (state / 'perftest-SB_N2.runs').read_text() == '3'


def drain_reason(node):
    return subprocess.run(['sinfo', '-h', '-N', '-n', node, '-o', '%E'],
                          capture_output=True, text=True).stdout.splitlines()[0]


def reservations():
    return subprocess.run(['scontrol', 'show', 'reservation'],
                          capture_output=True, text=True).stdout


def test_resumed_nodes_are_tested_only_once_slurm_hears_from_them(
        monkeypatch):
    from scripts.acceptance import slurm
    answers = iter(['sb-n1 idle*\nsb-n3 idle*\n', 'sb-n1 maint\nsb-n3 idle*\n',
                    'sb-n1 maint\nsb-n3 maint\n'])
    asked, slept = [], []
    monkeypatch.setattr(slurm, '_slurm',
                        lambda argv, env: asked.append(argv) or next(answers))
    assert slurm.wait_responding(['sb-n1', 'sb-n3'], sleep=slept.append) == []
    assert len(asked) == 3 and slept == [1, 1]
    assert asked[0][asked[0].index('-n') + 1] == 'sb-n1,sb-n3'
    # one that never answers is named once the time is up
    clock = iter(range(0, 100, 30))
    monkeypatch.setattr(slurm, '_slurm', lambda argv, env: 'sb-n1 idle*\n')
    assert slurm.wait_responding(['sb-n1'], timeout_s=60, sleep=slept.append,
                                 clock=lambda: next(clock)) == ['sb-n1']
    assert slurm.silent_nodes({'a': 'drained', 'b': 'down*', 'c': 'mixed'},
                              ['a', 'b', 'c', 'd']) == ['a', 'b', 'd']


def test_resume_tests_only_its_own_drains_in_a_reservation(sandbox_env):
    from tests.support.acceptance_runs import LOW_STREAM
    ours = 'clusterproof acceptance: StreamCheck triad_bw=1190.4 MB/s ref 8000'
    others = {'sb-n2': 'admin: DIMM replacement',
              'sb-n4': 'Healthcheck failures: nvidia-smi'}
    for node, reason in {'sb-n3': ours, 'sb-n1': ours, **others}.items():
        subprocess.run(['scontrol', 'update', f'nodename={node}',
                        'state=drain', f'reason={reason}'], check=True)
    # sb-n1 is still slow, sb-n3 was fixed
    env = {**sandbox_env,
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N1': str(LOW_STREAM)}
    result, summary = acceptance(env, *ARGS, '--resume', '--', '-S',
                                 'array_size=20000000')
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    name = re.search(r'^reservation (clusterproof-resume-\S+) holds '
                     r'sb-n1,sb-n3$', out, re.M).group(1)
    assert verdict_of(summary) == {'sb-n1': 'bad', 'sb-n3': 'good'}, out
    assert f'reservation {name} deleted' in out and name not in reservations()
    scripts = list(Path(env['CLUSTERPROOF_HOME']).rglob('rfm_job.sh'))
    assert scripts and all(f'#SBATCH --reservation={name}' in s.read_text()
                           for s in scripts)
    assert node_state('sb-n3') == 'idle'
    assert node_state('sb-n1').startswith('drain')
    assert drain_reason('sb-n1') == (
        'clusterproof acceptance: still bad after --resume: StreamCheck '
        'copy_bw=1067.4 MB/s ref 8000 MB/s')
    for node, reason in others.items():     # never touched
        assert node_state(node).startswith('drain')
        assert drain_reason(node) == reason
