"""Benchmark: acceptance planning on a fake Slurm partition of N nodes
(`sinfo`/`scontrol` stand-ins on PATH); `reframe --dry-run` (the plan's own
options) of every session of a 1,000-node partition's plan, end to end:
the node phase's batch jobs and its one-node checks (NvlinkFabric, planned
only where the partition has GPUs), the pair phase, the set and the whole
partition, with each session's test cases, job scripts, wall and CPU
seconds, and the whole plan's total; then the share of `--list` spent in
ReFrame's deprecation-warning stack walks (inspect.stack) under cProfile,
for the batch-job node session.

    nice -n 10 .venv/bin/python -m tests.bench.bench_acceptance
        [--nodes 1000 10000] [--batch-nodes 1000]

Not collected by pytest.
"""
from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.acceptance import plan
from tests.support.helpers import REPO, suite_env

SINFO = """#!/bin/sh
i=0
while [ $i -lt {nodes} ]; do printf 'hbv4-%05d idle\\n' $i; i=$((i+1)); done
"""
SCONTROL = """#!/bin/sh
[ "$1" = ping ] && echo 'Slurmctld(primary) at fake is UP'
"""


def fake_slurm(directory: Path, nodes: int) -> None:
    for name, text in (('sinfo', SINFO.format(nodes=nodes)),
                       ('scontrol', SCONTROL)):
        path = directory / name
        path.write_text(text)
        path.chmod(0o755)


def time_plan(work: Path, nodes: int) -> tuple[float, list]:
    from scripts.acceptance import plan, session
    bin_dir = work / f'bin-{nodes}'
    bin_dir.mkdir(exist_ok=True)
    fake_slurm(bin_dir, nodes)
    os.environ['PATH'] = f'{bin_dir}{os.pathsep}{os.environ["PATH"]}'
    options = session.Options(selection=plan.Selection(
        checks=[str(REPO / 'checks')], tags=['acceptance']),
        system='azure', partitions=['hbv4'])
    start = time.monotonic()
    _, phases, _, _, _ = session._inventory(options, say=lambda line: None)
    seconds = time.monotonic() - start
    argvs = [plan.reframe_options(p, options.selection, 'r.json', 'prefix',
                                  0) for p in phases]
    os.environ['PATH'] = os.environ['PATH'].split(os.pathsep, 1)[1]
    return seconds, phases, argvs


def reframe_seconds(work: Path, phase, action: str, profile: Path | None,
                    name: str = '') -> dict:
    """ReFrame's *action* on one phase: its wall and CPU seconds, the test
    cases its report holds and the job scripts it wrote."""
    name = name or action
    argv = plan.reframe_options(
        phase, plan.Selection(checks=[str(REPO / 'checks')],
                              tags=['acceptance']),
        str(work / f'{name}.json'), str(work / f'prefix-{name}'), 0)
    argv = [a for a in argv if a != '-r'] + [action]
    reframe = str(Path(sys.executable).parent / 'reframe')
    runner = [sys.executable, '-m', 'cProfile', '-o', str(profile),
              reframe] if profile else [reframe]
    env = suite_env(work / 'home')
    start, cpu = time.monotonic(), os.times()
    done = subprocess.run([*runner, '-C', str(REPO / 'config' / 'config.py'),
                           *argv], env=env, cwd=str(REPO),
                          capture_output=True, text=True)
    seconds = time.monotonic() - start
    after = os.times()
    used = (after.children_user - cpu.children_user
            + after.children_system - cpu.children_system)
    if done.returncode != 0:
        sys.exit(f'reframe {action} failed:\n{done.stdout[-3000:]}')
    scripts = len([p for p in (work / f'prefix-{name}').rglob('rfm_job.sh')
                   if 'fanout' not in p.parts])
    return {'wall': seconds, 'cpu': used, 'scripts': scripts,
            'cases': report_cases(work / f'{name}.json')}


def report_cases(report: Path) -> int:
    """The test cases of a ReFrame run report (0 when none was written)."""
    try:
        runs = json.loads(report.read_text()).get('runs', [])
    except (OSError, ValueError):
        return 0
    return len(runs[0].get('testcases', [])) if runs else 0


def stack_walk_share(profile: Path) -> tuple[float, float]:
    stats = pstats.Stats(str(profile))
    total = stats.total_tt
    walk = sum(value[3] for key, value in stats.stats.items()
               if key[2] == 'stack' and key[0].endswith('inspect.py'))
    return walk, total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--nodes', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--batch-nodes', type=int, default=1000)
    args = parser.parse_args(argv)
    print(f'load average at start: {os.getloadavg()[0]:.2f}')
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ['CLUSTERPROOF_HOME'] = str(work / 'home')
        for nodes in args.nodes:
            seconds, phases, argvs = time_plan(work, nodes)
            print(f'{nodes} nodes: planned in {seconds:.2f} s (two '
                  f'`reframe --show-config` included): {len(phases)} '
                  f'ReFrame sessions, longest argument '
                  f'{max(len(a) for v in argvs for a in v)} B, longest '
                  f'command line {max(sum(len(a) + 1 for a in v) for v in argvs)} B')
        # the whole plan, every session, end to end
        _, phases, _ = time_plan(work, args.batch_nodes)
        total = {'wall': 0.0, 'cpu': 0.0, 'cases': 0, 'scripts': 0}
        for scope, tag in dict.fromkeys((p.scope, p.tag) for p in phases):
            sessions = [p for p in phases if (p.scope, p.tag) == (scope, tag)]
            spent = {key: 0 for key in total}
            for phase in sessions:
                found = reframe_seconds(work, phase, '--dry-run', None,
                                        phase.label)
                spent = {key: spent[key] + found[key] for key in spent}
            total = {key: total[key] + spent[key] for key in total}
            print(f'{scope} phase{f" ({tag})" if tag else ""}, '
                  f'{args.batch_nodes} nodes (--node-batch '
                  f'{plan.NODE_BATCH}): --dry-run {spent["wall"]:.1f} s wall, '
                  f'{spent["cpu"]:.1f} s CPU, {spent["cases"]} test cases, '
                  f'{spent["scripts"]} job scripts, {len(sessions)} '
                  f'session(s)')
        print(f'whole {args.batch_nodes}-node plan: --dry-run '
              f'{total["wall"]:.1f} s wall, {total["cpu"]:.1f} s CPU, '
              f'{total["cases"]} test cases, {total["scripts"]} job scripts, '
              f'{len(phases)} sessions; load average at end: '
              f'{os.getloadavg()[0]:.2f}')
        node_phase = next(p for p in phases if p.scope == 'node')
        profile = work / 'list.prof'
        reframe_seconds(work, node_phase, '--list', profile, 'profile')
        walk, spent = stack_walk_share(profile)
        print(f'--list of one node session under cProfile: {spent:.1f} s, '
              f'of which inspect.stack (deprecation warnings) {walk:.1f} s '
              f'({100 * walk / spent:.0f}%)')


if __name__ == '__main__':
    main()
