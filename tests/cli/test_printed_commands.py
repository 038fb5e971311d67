"""The commands the README and the CLI print, run exactly as printed (read
from them, not copied here), each within a time bound: the quick start's
first command, the sandbox walk-through with its next steps, and the
query, report, parse, ingest and acceptance examples on what the quick
start stored."""
import json
import os
import re
import shlex
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from tests.support.helpers import REPO, suite_env

README = REPO / 'README.md'
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


def readme_block(after: str) -> list[str]:
    """The command lines of the first ``sh`` block after the text ``after``."""
    text = README.read_text()
    start = text.index(after)
    match = re.compile(r'^```sh\n(.*?)^```', re.S | re.M).search(text, start)
    return [line for line in match.group(1).splitlines() if line.strip()]


def readme_lines_with(text: str) -> list[str]:
    """Every command line of the README's ``sh`` blocks holding ``text``."""
    blocks = re.findall(r'^```sh\n(.*?)^```', README.read_text(), re.S | re.M)
    return [line for block in blocks for line in block.splitlines()
            if text in line]


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
    [line] = readme_block('Run the suite on this machine')
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


def test_the_query_examples(quick_start):
    lines = readme_block("After the quick start's first command, read what "
                         'it stored')
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
    line = f'{readme_block("After the quick start")[0].rsplit(" ", 1)[0]} ' \
        'node_outliers'
    result, _ = run_shell(line, quick_start.env, EXAMPLE_BOUND_S,
                          quick_start.cwd)
    assert result.stdout == '(no rows)\n'
    assert result.stderr.startswith('clusterproof query: no rows: no run '
                                    'measured a metric on 5 or more nodes')


def test_the_report_example(quick_start):
    [line] = readme_lines_with(' report --out ')
    result, _ = run_shell(line, quick_start.env, EXAMPLE_BOUND_S,
                          quick_start.cwd)
    assert result.returncode == 0, result.stderr
    out = shlex.split(line, comments=True)
    target = os.path.expanduser(out[out.index('--out') + 1]).replace(
        os.path.expanduser('~'), str(quick_start.home))
    assert not str(target).startswith(str(REPO))
    assert 'HpccNode' in open(target).read()


def test_the_parse_and_ingest_examples(quick_start):
    parse, ingest = readme_block('For example, on outputs the tests keep')
    parsed, _ = run_shell(parse, quick_start.env, EXAMPLE_BOUND_S)
    assert parsed.returncode == 0, parsed.stderr
    assert json.loads(parsed.stdout)['ok'] is True
    first, _ = run_shell(ingest, quick_start.env, EXAMPLE_BOUND_S)
    again, _ = run_shell(ingest, quick_start.env, EXAMPLE_BOUND_S)
    assert first.returncode == again.returncode == 0, first.stderr
    assert re.match(r'stored [1-9]\d* record\(s\) from 1 file', first.stdout)
    assert again.stdout.startswith('stored 0 record(s) from 1 file(s) ')
    assert again.stdout.rstrip().endswith('nothing new to store')


def test_the_acceptance_example_names_a_command_that_works(quick_start):
    # every example names the partition hbv4: on the quick start's machine
    # each says so and names the same command with its partitions; the
    # first one (the README's main example) is then run as named
    commands = []
    for line in readme_block('the end it runs `clusterproof sync`'):
        refused, _ = run_shell(line, quick_start.env, EXAMPLE_BOUND_S)
        assert refused.returncode == 2, refused.stderr
        message, command = refused.stderr.strip().split('\n  ')
        assert message == ('acceptance: no partition hbv4 in system local '
                           '(it has: default); on this system run:')
        words = shlex.split(line, comments=True)
        assert shlex.split(command) == [
            words[0], 'acceptance', '--partition', 'default', *words[4:]]
        commands.append(command)
    command = commands[0]
    result, _ = run_shell(command, quick_start.env, ACCEPTANCE_BOUND_S)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr  # tools not measured
    # what passed is in the table, and counted
    assert re.search(r'^local:default \(whole\) +HpccNode +- +- +- +pass +'
                     r'\d+ result\(s\)', out, re.M), out
    assert re.search(r'^0 node\(s\): .*; \d+ check result\(s\): 1 passed, '
                     r'0 failed, \d+ not measured$', out, re.M), out
    summary = json.loads(open(re.search(r'^summary: (\S+)$', out,
                                        re.M).group(1)).read())
    assert summary['counts']['checks']['pass'] == 1
    assert summary['partition_passes'][0]['check'] == 'HpccNode'
    # the rows of each phase are linked to its ReFrame session and report
    [phase] = summary['phases']
    assert phase['reframe_session_uuid'] and phase['store_session_id']
    entries = [json.loads(entry) for entry in
               (quick_start.home / '.clusterproof' / 'sessions.jsonl')
               .read_text().splitlines()]
    stored = next(e for e in entries
                  if e['session_id'] == phase['store_session_id'])
    assert stored['reframe_session_uuid'] == phase['reframe_session_uuid']
    assert stored['report_file'] == phase['report']
    own = next(e for e in entries if e['session_id'] == summary['session_id'])
    assert own['reframe_sessions'] == [phase['reframe_session_uuid']]


def printed_next_steps(directory, env):
    """What `sandbox start` prints to do next, as (source, reframe, stop)."""
    result = subprocess.run([sys.executable, CLI, 'sandbox', 'start',
                             '--dir', str(directory)], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    use = lines[lines.index('use it with:') + 1:lines.index('stop it with:')]
    stop = lines[lines.index('stop it with:') + 1]
    source, reframe = use
    return source, reframe, stop


def test_the_sandbox_walkthrough_ends_as_printed(slurm_sandbox, tmp_path):
    # The running test sandbox is the one `sandbox start` would start: it
    # says so and prints the same next steps, which run here as printed.
    env = private_env(tmp_path, {'CLUSTERPROOF_PROGRESS_S': '5'})
    source, reframe, stop = printed_next_steps(slurm_sandbox.dir, env)
    assert source == f'source {slurm_sandbox.dir}/env'
    assert reframe == '.venv/bin/reframe -C config/config.py --system ' \
        'sandbox -c checks -r'
    assert stop.endswith(f'sandbox stop --dir {slurm_sandbox.dir}')
    readme = readme_block('It prints the next steps, ready to paste')
    assert reframe in readme and readme[-1].endswith('sandbox stop')

    result, elapsed = run_shell(f'{source} && {reframe}', env,
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
