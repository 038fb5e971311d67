"""`clusterproof acceptance` run for real on the five-node sandbox Slurm:
the command, its sandbox environment (a fixture, registered in
tests/conftest.py), what it stored and the verdicts it gave."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts.cli import sandbox
from tests.support.helpers import DATA, REPO, STANDINS, stored_rows, suite_env

NODES = list(sandbox.NODES)
LOW_STREAM = DATA / 'stream' / 'stream_c_omp2_20M_cpu_quota_10pct.out'
BUSY_STREAM = DATA / 'stream' / 'stream_c_omp2_20M_busy_vm.out'
ONE_THREAD_STREAM = DATA / 'stream' / 'stream_c_omp1_10M.out'
SANDBOX_REFERENCES = DATA / 'acceptance' / 'references'
STREAM_ONLY = ['--checks', 'checks/cpu/stream.py', '--exclude',
               '^StreamMpiCheck']
PERFTEST_PAIR_ONLY = [
    '--checks', 'checks/network/perftest.py', '--exclude', 'ib_send',
    '--exclude', 'PerftestLoopback']
# All fake nodes are one host: perftest pairs must not run at the same
# time (they would share ports); on a cluster they do.
PAIR_REFRAME_ARGS = ['--', '-S', 'hcas=mlx5_ib0', '-S', 'pair_timeout=30',
                     '--exec-policy', 'serial']
# The sandbox's own method: informational against the shipped HBv4
# reference (another method), so only the peers can judge it.
SANDBOX_METHOD = ['--', '-S', 'num_threads=2', '-S', 'array_size=20000000']


def acceptance(env, *args, timeout=600):
    result = subprocess.run(
        [sys.executable, str(REPO / 'scripts' / 'clusterproof'),
         'acceptance', *args], env=env, cwd=str(REPO), capture_output=True,
        text=True, timeout=timeout)
    match = re.search(r'^summary: (\S+)$', result.stdout, re.M)
    summary = json.loads(open(match.group(1)).read()) if match else None
    return result, summary


def expected(verdict, others=None):
    """Every sandbox node's verdict: *verdict*, or the one *others* gives."""
    return {node: (others or {}).get(node, verdict) for node in NODES}


def verdict_of(summary):
    return {n['node']: n['verdict'] for n in summary['nodes']}


def node_state(node):
    return subprocess.run(['sinfo', '-h', '-n', node, '-o', '%T'],
                          capture_output=True, text=True).stdout.split()[0]


def all_idle(timeout=60):
    """Whether every node is idle (a resumed node is 'idle*' for a moment)."""
    deadline = time.monotonic() + timeout
    while [node_state(n) for n in NODES] != ['idle'] * len(NODES):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


@pytest.fixture
def sandbox_env(slurm_sandbox, tmp_path):
    env = suite_env(tmp_path / 'home', {
        **slurm_sandbox.env,
        'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}',
        'CLUSTERPROOF_REFERENCES': str(SANDBOX_REFERENCES)})
    assert all_idle()
    yield env
    for node in NODES:  # leave the sandbox as found, whatever happened
        if node_state(node).startswith('drain'):
            subprocess.run(['scontrol', 'update', f'nodename={node}',
                            'state=resume'], check=True)
    assert all_idle()


def stored(env):
    return stored_rows(Path(env['CLUSTERPROOF_HOME']))


def by_pass(env, summary) -> tuple[list[dict], list[dict]]:
    """(the rows of acceptance's first measurement, the rows its
    confirmation measured again): summary.json names the first one's store
    sessions; acceptance's own verdict rows are in neither."""
    first = {p['store_session_id'] for p in summary['phases']} - {None}
    rows = [r for r in stored(env) if r['facility'] != 'clusterproof-acceptance']
    return ([r for r in rows if r['session_id'] in first],
            [r for r in rows if r['session_id'] not in first])


def no_references(env):
    return {k: v for k, v in env.items() if k != 'CLUSTERPROOF_REFERENCES'}


# What differs between any two runs, or says how the job was pinned.
PER_RUN = {'record_id', 'TimeGenerated', 'session_id', 'check_jobid',
           'check_job_completion_time', 'check_hashcode',
           'check_display_name', 'reframe_session'}


def comparable(row):
    params = {k: v for k, v in row['check_params'].items()
              if k.lstrip('.') != 'pinned_nodes'}
    return {**{k: v for k, v in row.items() if k not in PER_RUN
               and not k.endswith('_unix')}, 'check_params': params}


def changes(row: dict, other: dict) -> dict:
    """What *row* says otherwise than *other*, one level into dicts."""
    found = {}
    for key in set(row) | set(other):
        mine, theirs = row.get(key), other.get(key)
        if mine != theirs:
            found[key] = changes(mine, theirs) if isinstance(mine, dict) \
                and isinstance(theirs, dict) else (mine, theirs)
    return found


def one_batch_job(result, env, check: str) -> Path:
    """The job script of the one test case of *check* in the run."""
    assert re.search(r'^  1 test case\(s\)', result.stdout, re.M)
    home = Path(env['CLUSTERPROOF_HOME'])
    [script] = [p for p in home.rglob('rfm_job.sh')
                if check in str(p) and 'fanout' not in str(p)]
    return script


def batched_and_one_by_one(env, tmp_path, before, after=(), broken=NODES[1],
                           others='good'):
    """Acceptance with *before* + *after* as ReFrame's options, in batch
    jobs and with --node-batch 1 (in a home of its own): both exit 1 and
    find *broken* bad, every other node *others* (good; not_judged where
    what is left of a ring of pairs is too few peers and no reference
    judges it). -> (the batch run, its summary, the one-by-one run's
    summary and env)."""
    single_env = {**env, 'CLUSTERPROOF_HOME': str(tmp_path / 'single')}
    single, single_summary = acceptance(single_env, *before, '--node-batch',
                                        '1', *after)
    batch, summary = acceptance(env, *before, *after)
    for result in (single, batch):
        assert result.returncode == 1, result.stdout + result.stderr
    expected = {node: others for node in NODES}
    expected[broken] = 'bad'
    assert verdict_of(summary) == verdict_of(single_summary) == expected
    return batch, summary, single_summary, single_env


def pair_findings(summary):
    """What was not a pass, node by node, with the partner."""
    return sorted(((f['node'], f['partner'], f['check'], f['metric'],
                    f['verdict'], f['reason'], f['blamed_on_partner'])
                   for n in summary['nodes'] for f in n['findings']
                   if f['verdict'] != 'pass'), key=repr)
