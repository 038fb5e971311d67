"""Acceptance over powered-down nodes (`idle~`, as CycleCloud keeps
autoscaled nodes): reported as such by default, started for the run with
--power-up up to --max-power-up, the cost said first. On the real sandbox
Slurm, whose sinfo a wrapper shows two nodes powered off."""
import os
import shutil

from scripts.acceptance import power_up, slurm, verdicts
from tests.support.acceptance_runs import (STREAM_ONLY, acceptance, expected,
                                           stored, verdict_of)
from tests.support.helpers import STANDINS

POWERED_DOWN_SINFO = STANDINS / 'powered_down'


def test_powered_down_is_neither_usable_nor_down():
    assert slurm.is_powered_down('idle~')
    assert not slurm.is_powered_down('down~')      # down and off: down
    assert not slurm.is_powered_down('idle')
    assert not slurm.is_usable('idle~')
    found = {v.node: v for v in verdicts.node_verdicts([], {'az:hpc': {
        'hpc-1': 'idle~', 'hpc-2': 'down~', 'hpc-3': 'idle'}})}
    assert found['hpc-1'].verdict == verdicts.POWERED_DOWN
    assert found['hpc-1'].worst_findings()[0].reason == \
        'powered down; `--power-up` to include'
    assert found['hpc-2'].verdict == verdicts.NOT_MEASURED
    assert 'Slurm state down~' in found['hpc-2'].findings[0].reason


def test_power_up_choice_and_cost():
    states = {'a': 'idle', 'b': 'idle~', 'c': 'idle~', 'd': 'drained'}
    assert power_up.choose(states, False, 8) == []
    assert power_up.choose(states, True, 1) == ['b']
    assert power_up.choose(states, True, 8) == ['b', 'c']
    assert power_up.suspend_time_s('SuspendTime             = 600 sec\n') \
        == 600
    assert power_up.suspend_time_s('SuspendTime             = NONE\n') is None
    lines = power_up.cost_lines({'az:hpc': ['b']}, {'az:hpc': states}, 600)
    assert lines[0].startswith('--power-up: Slurm starts 1 powered-down')
    assert 'at least 0.17 node-hours' in lines[1]
    assert '1 more powered-down node(s) stay down' in lines[2]


def powered_down_env(env, nodes):
    return {**env,
            'PATH': f'{POWERED_DOWN_SINFO}{os.pathsep}{env["PATH"]}',
            'CLUSTERPROOF_STANDIN_REAL_SINFO': shutil.which('sinfo'),
            'CLUSTERPROOF_STANDIN_POWERED_DOWN': ','.join(nodes)}


def test_powered_down_nodes_are_reported_then_started_on_request(
        sandbox_env):
    env = powered_down_env(sandbox_env, ['sb-n3', 'sb-n4'])
    args = ['--system', 'sandbox', '--partition', 'hbv4', *STREAM_ONLY,
            '--', '-S', 'array_size=20000000']
    result, summary = acceptance(env, *args)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert verdict_of(summary) == expected('good', {
        'sb-n3': 'powered_down', 'sb-n4': 'powered_down'})
    assert 'sb-n3  (powered down)' in result.stdout
    assert 'powered down; `--power-up` to include' in result.stdout
    assert '--power-up: Slurm starts' not in result.stdout
    rows = [r for r in stored(env) if r['check_perf_result'] == 'not_measured']
    assert sorted(r['check_job_nodelist'][0] for r in rows) == \
        ['sb-n3', 'sb-n4']
    # --power-up: the cost is said before any job, then sb-n3 is measured
    result, summary = acceptance(env, '--power-up', '--max-power-up', '1',
                                 *args)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert verdict_of(summary) == expected('good',
                                           {'sb-n4': 'powered_down'})
    said = out.index('--power-up: Slurm starts 1 powered-down node(s) for '
                     'this run: sandbox:hbv4: sb-n3')
    assert said < out.index('running node checks')
    assert '1 more powered-down node(s) stay down (--max-power-up)' in out
