"""Every command the READMEs show in an ``sh`` block, run as printed (read
from them, not copied here), each within a time bound: the quick start,
the sandbox walk-through with its next steps, and the query, report,
parse, ingest, acceptance, baseline and sync examples on what the quick
start stored. A line no test here can run is named in NOT_RUN_HERE, with
why; test_every_printed_command_is_run_here_or_said_why holds the two
lists to the READMEs."""
import json
import os
import re
import shlex
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from scripts.cli import sandbox
from tests.support.helpers import REPO, stored_rows, suite_env
from tests.support.readmes import block_after, command_lines, readme_paths

README = REPO / 'README.md'
CHECKS_README = REPO / 'checks' / 'README.md'
RESULTS_README = REPO / 'config' / 'results' / 'README.md'
QUERY_README = REPO / 'scripts' / 'query' / 'README.md'
ACCEPTANCE_README = REPO / 'scripts' / 'acceptance' / 'README.md'
# Each example the tests run: the README and the text its sh block follows.
EXAMPLES = {
    'quick start': (README, 'Run the suite on this machine'),
    'tests': (README, 'Run the tests (as root'),
    'cluster': (README, 'clone the repository on a login node'),
    'sandbox': (README, 'It prints the next steps, ready to paste'),
    'parse and ingest': (README, 'For example, on outputs the tests keep'),
    'nccl dry run': (CHECKS_README, 'Try one node first'),
    'sync': (RESULTS_README, 'Shipping what the live push missed'),
    'acceptance': (ACCEPTANCE_README, '# scripts/acceptance'),
    'baseline': (ACCEPTANCE_README, 'Site baselines: `clusterproof baseline`'),
    'query': (QUERY_README, "After the quick start's first command, read "
              'what it stored'),
    'report': (QUERY_README, '## The report'),
    'query index': (QUERY_README, '## How the local engine reads the store'),
    'query benchmark': (REPO / 'tests' / 'bench' / 'README.md',
                        '## Queries and the report'),
}
# What the READMEs show and no test here runs, and why.
NOT_RUN_HERE = {
    '.venv/bin/reframe -C config/config.py -c checks -t acceptance -r':
        "submits the acceptance checks to a cluster's scheduler; the "
        'sandbox walk-through runs every check, these among them',
    '.venv/bin/python -m pytest tests -q -m "not sandbox and not browser '
    'and not kusto" -n 4 --dist loadfile':
        'the fast tier itself, which cannot run inside a run of the tests; '
        'tests/bench/README.md has its time',
    'nice -n 5 .venv/bin/python -m tests.bench.fleet_store DIR --rows 300000':
        'a benchmark: it writes a store of 300,000 rows',
    'nice -n 5 .venv/bin/python -m tests.bench.bench_queries --rows 300000 '
    '--home DIR': 'a benchmark: every query, cold and warm, on that store',
}
CLI = str(REPO / 'scripts' / 'clusterproof')
QUICK_START_BOUND_S = 300
WALKTHROUGH_BOUND_S = 600
EXAMPLE_BOUND_S = 120
ACCEPTANCE_BOUND_S = 400
# What a user's shell in the checkout sees (the examples' relative paths);
# a directory of links to it, so that files the examples write (my_query.kql,
# a report) land in a scratch directory, not the checkout.
CHECKOUT_ENTRIES = ('.venv', 'scripts', 'config', 'checks', 'bicep', 'tests',
                    'requirements.txt', 'README.md')
PARTITIONS = ('hbv4', 'hbv4-squeue', 'ndv5')


def example(name: str) -> list[str]:
    """The command lines of the README's example ``name`` (EXAMPLES)."""
    return block_after(*EXAMPLES[name])


def user_checkout(tmp_path):
    cwd = tmp_path / 'checkout'
    cwd.mkdir()
    for name in CHECKOUT_ENTRIES:
        (cwd / name).symlink_to(REPO / name)
    return cwd


def private_env(tmp_path, extra=None):
    """A user's shell: its own HOME, TMPDIR and CLUSTERPROOF_HOME, and no
    sandbox variables (the printed `source` sets them)."""
    home = tmp_path / 'user'
    (home / 'tmp').mkdir(parents=True, exist_ok=True)
    env = suite_env(home / '.clusterproof', {'HOME': str(home),
                                             'TMPDIR': str(home / 'tmp'),
                                             **(extra or {})})
    for name in ('SLURM_CONF', 'CLUSTERPROOF_SANDBOX_DIR'):
        env.pop(name, None)
    return env


def run_shell(line, env, timeout, cwd=REPO):
    began = time.monotonic()
    result = subprocess.run(['bash', '-c', line], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - began
    assert elapsed < timeout
    return result, elapsed


def summary_counts(output):
    match = re.search(r'Ran (\d+)/(\d+) test case\(s\) from \d+ check\(s\) '
                      r'\((\d+) failure\(s\), \d+ expected failure\(s\), '
                      r'(\d+) skipped, (\d+) aborted\)', output)
    assert match, output[-3000:]
    ran, total, failed, skipped, aborted = map(int, match.groups())
    return {'ran': ran, 'total': total, 'failed': failed, 'skipped': skipped,
            'aborted': aborted}


def passed(output, check, partition):
    return re.search(rf'OK \] \(\s*\d+/\d+\) {check} /\w+ '
                     rf'@{re.escape(partition)}\+', output) is not None


@pytest.fixture(scope='module')
def quick_start(tmp_path_factory):
    """The quick start's first command, run once: its store feeds the
    query, report and acceptance examples."""
    tmp = tmp_path_factory.mktemp('quick_start')
    [line] = example('quick start')
    env = private_env(tmp)
    result, elapsed = run_shell(line, env, QUICK_START_BOUND_S)
    return SimpleNamespace(line=line, result=result, elapsed=elapsed,
                           env=env, cwd=user_checkout(tmp),
                           home=tmp / 'user')


def test_the_quick_start_first_command(quick_start):
    assert quick_start.line.startswith('bash scripts/setup.sh && '
                                       '.venv/bin/reframe ')
    output = quick_start.result.stdout + quick_start.result.stderr
    assert quick_start.result.returncode == 0, output[-3000:]
    counts = summary_counts(output)
    assert counts['failed'] == counts['aborted'] == 0
    assert passed(output, 'HpccNode', 'local:default')
    assert re.search(r'^clusterproof: \d+ row\(s\) stored in ', output, re.M)
    assert '\x1b[' not in output     # no colour codes outside a terminal
    # ReFrame's built-in first log file is not left in TMPDIR
    assert not list((quick_start.home / 'tmp').glob('rfm-*.log'))


def test_the_quick_starts_hpcc_is_a_marked_smoke_run(quick_start):
    # The embedded default stays quick: on the local system HPCC (Debian's,
    # for real) runs a smoke size, says so, and its rows are marked and
    # carry no verdict.
    output = quick_start.result.stdout + quick_start.result.stderr
    assert 'HpccNode: smoke size on local:default' in output
    rows = [row for row in stored_rows(quick_start.home / '.clusterproof')
            if row['check_name'] == 'HpccNode']
    assert rows
    for row in rows:
        assert row['check_params']['size_profile'] == 'smoke'
        assert row['check_params']['problem_size'] == 2000
        assert row['check_params']['no_verdict_reasons'] == ['smoke size']
        assert row['check_perf_result'] in ('no_reference', 'informational')
    # a real measurement, and a real time limit on the local job too
    triad = next(row for row in rows
                 if row['check_perf_var'] == 'StarSTREAM_Triad')
    assert triad['check_perf_value'] > 0
    [script] = (quick_start.home / '.clusterproof' / 'runs').rglob(
        'HpccNode/rfm_job.sh')
    text = script.read_text()
    assert 'mpirun' in text and '--bind-to core' in text


def test_the_query_examples(quick_start):
    lines = example('query')
    (quick_start.cwd / 'my_query.kql').write_text(
        'clusterproof_results | summarize rows = count() by test\n')
    results = [run_shell(line, quick_start.env, EXAMPLE_BOUND_S,
                         quick_start.cwd)[0] for line in lines]
    assert [r.returncode for r in results] == [0] * len(lines), \
        [r.stderr for r in results]
    listed, trends, outliers, own = results
    assert re.search(r'^trends ', listed.stdout, re.M)
    assert 'HpccNode' in trends.stdout
    # another cluster's name: no rows, and the reason
    assert json.loads(outliers.stdout) == []
    assert outliers.stderr == ('clusterproof query: no rows: no stored row '
                               'matches --since/--cluster/--partition\n')
    assert own.stdout.splitlines()[0] == 'test,rows'
    assert 'HpccNode,8' in own.stdout


def test_node_outliers_after_the_quick_start_says_why_it_is_empty(quick_start):
    listing = example('query')[0]
    line = f'{listing.rsplit(" ", 1)[0]} node_outliers'
    result, _ = run_shell(line, quick_start.env, EXAMPLE_BOUND_S,
                          quick_start.cwd)
    assert result.stdout == '(no rows)\n'
    assert result.stderr.startswith('clusterproof query: no rows: no run '
                                    'measured a metric on 5 or more nodes')


def test_the_report_example(quick_start):
    [line] = example('report')
    result, _ = run_shell(line, quick_start.env, EXAMPLE_BOUND_S,
                          quick_start.cwd)
    assert result.returncode == 0, result.stderr
    out = shlex.split(line, comments=True)
    target = os.path.expanduser(out[out.index('--out') + 1]).replace(
        os.path.expanduser('~'), str(quick_start.home))
    assert not str(target).startswith(str(REPO))
    assert 'HpccNode' in open(target).read()


def test_the_query_index_example(quick_start):
    query, listing, removal = example('query index')
    results = [run_shell(line, quick_start.env, EXAMPLE_BOUND_S,
                         quick_start.cwd)[0]
               for line in (query, listing, removal, listing)]
    assert [r.returncode for r in results[:3]] == [0, 0, 0], \
        [r.stderr for r in results]
    assert 'index.duckdb' in results[1].stdout.split()
    assert results[3].returncode != 0          # removed: built again later


def test_the_parse_and_ingest_examples(quick_start):
    parse, ingest = example('parse and ingest')
    parsed, _ = run_shell(parse, quick_start.env, EXAMPLE_BOUND_S)
    assert parsed.returncode == 0, parsed.stderr
    assert json.loads(parsed.stdout)['ok'] is True
    first, _ = run_shell(ingest, quick_start.env, EXAMPLE_BOUND_S)
    again, _ = run_shell(ingest, quick_start.env, EXAMPLE_BOUND_S)
    assert first.returncode == again.returncode == 0, first.stderr
    assert re.match(r'stored [1-9]\d* record\(s\) from 1 file', first.stdout)
    assert again.stdout.startswith('stored 0 record(s) from 1 file(s) ')
    assert again.stdout.rstrip().endswith('nothing new to store')


def test_the_acceptance_examples_name_the_partitions_this_machine_has(
        quick_start):
    # every example names the partition hbv4: on the quick start's machine
    # each says so and names the same command with its partitions (the
    # sandbox walk-through runs an acceptance on hbv4 for real)
    for line in example('acceptance'):
        refused, _ = run_shell(line, quick_start.env, EXAMPLE_BOUND_S)
        assert refused.returncode == 2, refused.stderr
        message, command = refused.stderr.strip().split('\n  ')
        assert message == ('acceptance: no partition hbv4 in system local '
                           '(it has: default); on this system run:')
        words = shlex.split(line, comments=True)
        assert shlex.split(command) == [
            words[0], 'acceptance', '--partition', 'default', *words[4:]]


def printed_next_steps(directory, env):
    """What `sandbox start` prints to do next: source, reframe, acceptance
    and stop."""
    result = subprocess.run([sys.executable, CLI, 'sandbox', 'start',
                             '--dir', str(directory)], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    use = lines[lines.index('use it with:') + 1:lines.index('stop it with:')]
    stop = lines[lines.index('stop it with:') + 1]
    source, reframe, acceptance = use
    return SimpleNamespace(source=source, reframe=reframe,
                           acceptance=acceptance, stop=stop)


def test_the_sandbox_walkthrough_ends_as_printed(slurm_sandbox, tmp_path):
    # The running test sandbox is the one `sandbox start` would start: it
    # says so and prints the same next steps, which run here as printed.
    env = private_env(tmp_path, {'CLUSTERPROOF_PROGRESS_S': '5'})
    steps = printed_next_steps(slurm_sandbox.dir, env)
    assert steps.source == f'source {slurm_sandbox.dir}/env'
    assert steps.reframe == '.venv/bin/reframe -C config/config.py ' \
        '--system sandbox -c checks -r'
    assert steps.stop.endswith(f'sandbox stop --dir {slurm_sandbox.dir}')
    readme = example('sandbox')
    assert steps.reframe in readme and steps.acceptance in readme
    assert readme[-1].endswith('sandbox stop')

    result, elapsed = run_shell(f'{steps.source} && {steps.reframe}', env,
                                WALKTHROUGH_BOUND_S)
    output = result.stdout + result.stderr
    assert elapsed < WALKTHROUGH_BOUND_S
    counts = summary_counts(output)
    assert counts['aborted'] == 0 and counts['ran'] > 0
    # HPCC (Debian's) runs for real on every partition, sized for the sandbox
    for partition in PARTITIONS:
        for check in ('HpccNode', 'HpccTwoNodes'):
            assert passed(output, check, f'sandbox:{partition}'), \
                (check, partition, output[-3000:])
    # what fails here fails for a tool the nodes lack, saying how to get it
    reasons = re.findall(r'^  \* Reason: (.*)$', output, re.M)
    assert len(reasons) == counts['failed']
    assert result.returncode == (1 if reasons else 0)
    assert all(' not found on node sb-n' in r for r in reasons), reasons
    # HBv4's STREAM method (48 threads) is skipped on 2-CPU nodes, saying so
    # (ndv5's SKU names no method: one thread per core fits, and runs)
    for partition in ('hbv4', 'hbv4-squeue'):
        assert re.search(rf'SKIP.*\] \(\s*\d+/\d+\) StreamCheck /\w+ '
                         rf'@sandbox:{partition}\+builtin \[StreamCheck asks '
                         rf'for 48 CPUs per task, but the nodes of '
                         rf'sandbox:{partition} have 2', output), partition
    # while jobs wait, a line says so (every 5 s here, 60 s by default)
    assert re.search(r'^clusterproof: \d+ job\(s\) pending, \d+ running; '
                     r'waiting longest: \w+ on sandbox:[\w-]+ \(job \d+, ',
                     output, re.M), output[-3000:]
    assert not list((tmp_path / 'user').glob('tmp/rfm-*.log'))


def test_the_sandbox_acceptance_example_judges_every_node(slurm_sandbox,
                                                          tmp_path):
    # After the printed `source`, the sandbox is the system: the printed
    # acceptance run judges each node of hbv4 on HPCC, which runs for real.
    # The five nodes share this host's cores, so a busy host can make one
    # look slow to its peers: good or bad, each node gets a verdict.
    env = private_env(tmp_path)
    steps = printed_next_steps(slurm_sandbox.dir, env)
    assert steps.acceptance == ('scripts/clusterproof acceptance --partition '
                                'hbv4 --checks checks/cpu/hpcc.py --exclude '
                                'HpccTwoNodes')
    result, _ = run_shell(f'{steps.source} && {steps.acceptance}', env,
                          ACCEPTANCE_BOUND_S)
    out = result.stdout
    assert result.returncode in (0, 1), out[-3000:] + result.stderr[-3000:]
    assert re.search(r'^5 node\(s\): \d+ bad, 0 suspect, \d+ flaky, \d+ not '
                     r'judged, 0 not measured, 0 powered down, \d+ good; ',
                     out, re.M), out[-3000:]
    summary = json.loads(open(re.search(r'^summary: (\S+)$', out,
                                        re.M).group(1)).read())
    verdicts = {node['node']: (node['partition'], node['verdict'])
                for node in summary['nodes']}
    assert sorted(verdicts) == sorted(sandbox.NODES)
    assert {partition for partition, _ in verdicts.values()} == {
        'sandbox:hbv4'}
    assert result.returncode == (1 if 'bad' in {
        verdict for _, verdict in verdicts.values()} else 0)
    # the rows of each phase are linked to its ReFrame session and report
    entries = [json.loads(entry) for entry in
               (tmp_path / 'user' / '.clusterproof' / 'sessions.jsonl')
               .read_text().splitlines()]
    by_id = {entry['session_id']: entry for entry in entries}
    # the node phase ran HpccNode and stored its rows; the other phases
    # had no test case
    measured = [phase for phase in summary['phases']
                if phase['store_session_id']]
    assert [phase['phase'] for phase in measured
            if 'node' in phase['phase']], summary['phases']
    for phase in measured:
        stored = by_id[phase['store_session_id']]
        assert stored['reframe_session_uuid'] == phase['reframe_session_uuid']
        assert stored['report_file'] == phase['report']
    own = by_id[summary['session_id']]
    assert set(own['reframe_sessions']) >= {
        phase['reframe_session_uuid'] for phase in measured}


def test_every_printed_command_is_run_here_or_said_why():
    shown = {line for path in readme_paths() for line in command_lines(path)}
    run = {line for name in EXAMPLES for line in example(name)}
    assert shown - set(NOT_RUN_HERE) == run - set(NOT_RUN_HERE)
    assert set(NOT_RUN_HERE) <= shown


def test_the_tests_command_is_what_ci_runs():
    [line] = example('tests')
    assert line in (REPO / '.ci' / 'run').read_text().splitlines()


def test_the_cluster_steps_set_up_as_the_quick_start_does():
    # the set-up line is the quick start's own first command, which
    # test_the_quick_start_first_command runs
    setup, discover, reframe = example('cluster')
    [quick_start] = example('quick start')
    assert quick_start.startswith(f'{setup} && ')
    assert reframe in NOT_RUN_HERE


def test_discover_as_printed_on_the_sandbox(slurm_sandbox, tmp_path):
    _, discover, _ = example('cluster')
    env = private_env(tmp_path)
    result, _ = run_shell(f'source {slurm_sandbox.dir}/env && {discover}',
                          env, EXAMPLE_BOUND_S)
    assert result.returncode == 0, result.stdout + result.stderr
    written = (tmp_path / 'user' / '.clusterproof' /
               'site-partitions.yaml').read_text()
    # the sandbox's Slurm partitions, whose 2-CPU nodes no family has
    for partition in ('hbv4', 'ndv5'):
        assert f'\n  {partition}:\n    family: null\n' in written, written


def test_the_sandbox_lines_are_what_start_prints_by_default(monkeypatch):
    start, source, reframe, acceptance, stop = example('sandbox')
    assert start == 'scripts/clusterproof sandbox start'
    # sandbox start's default directory, in a shell without TMPDIR
    monkeypatch.delenv(sandbox.DIR_VARIABLE, raising=False)
    monkeypatch.delenv('TMPDIR', raising=False)
    assert source == f'source {sandbox.default_dir()}/env'
    assert stop == 'scripts/clusterproof sandbox stop'


def test_the_nccl_dry_run_example(tmp_path):
    [line] = example('nccl dry run')
    env = private_env(tmp_path)
    result, _ = run_shell(line, env, EXAMPLE_BOUND_S)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r'NcclSingleNode %collective=all_reduce /\w+ '
                     r'@azure:ndv4\+', result.stdout), result.stdout[-3000:]
    scripts = list((tmp_path / 'user' / '.clusterproof' / 'runs').glob(
        '*/stage/azure/ndv4/*/NcclSingleNode*/rfm_job.sh'))
    assert scripts and all('#SBATCH' in script.read_text()
                           for script in scripts)


def test_the_baseline_examples(quick_start):
    dry_run, write, export = example('baseline')
    shown, _ = run_shell(dry_run, quick_start.env, EXAMPLE_BOUND_S)
    assert shown.returncode == 0, shown.stderr
    written, _ = run_shell(write, quick_start.env, EXAMPLE_BOUND_S)
    assert written.returncode == 0, written.stderr
    assert (quick_start.home / 'baselines').is_dir()
    exported, _ = run_shell(f'{export} && echo "$CLUSTERPROOF_BASELINES"',
                            quick_start.env, EXAMPLE_BOUND_S)
    assert exported.stdout == f'{quick_start.home / "baselines"}\n'


def test_the_sync_examples(quick_start, fake_azure):
    dry_run, ship, one_session, verify = example('sync')
    # a workspace the identity may read, holding nothing old enough to check
    fake_azure.answer_query = lambda query, timespan: []
    env = {**quick_start.env, **fake_azure.env(),
           'REQUESTS_CA_BUNDLE': fake_azure.ca_bundle,
           'SSL_CERT_FILE': fake_azure.ca_bundle}
    results = [run_shell(line, env, EXAMPLE_BOUND_S)[0]
               for line in (dry_run, ship, one_session, verify)]
    assert [r.returncode for r in results] == [0, 0, 0, 0], \
        [r.stdout + r.stderr for r in results]
    listed, shipped, _, verified = results
    count = int(re.search(r'would ship (\d+) row\(s\) in all',
                          listed.stdout).group(1))
    assert count > 0
    # every stored row arrived, once
    ids = [row['record_id'] for row in fake_azure.rows]
    assert len(ids) == len(set(ids)) == count
    assert fake_azure.queries, verified.stdout + verified.stderr
