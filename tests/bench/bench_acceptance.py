"""Benchmark: acceptance planning on a fake Slurm partition of N nodes
(`sinfo`/`scontrol` stand-ins on PATH); `reframe --dry-run` (the plan's own
options) of every session of a 1,000-node partition's plan but those that
stay one case per node or pair (the batch-job node and pair checks, the
set, the whole partition), end to end; ReFrame's cost per test case for
what stays one case per node or pair (PerftestLoopback, NvlinkFabric,
PerftestPair) on fewer nodes, with the share of `--list` spent in
ReFrame's deprecation-warning stack walks (inspect.stack) under cProfile.

    nice -n 10 .venv/bin/python -m tests.bench.bench_acceptance
        [--nodes 1000 10000] [--batch-nodes 1000] [--dry-run-nodes 50]

Not collected by pytest.
"""
from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.acceptance import plan
from tests.helpers import REPO, suite_env

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
    _, phases, _, _ = session._inventory(options, say=lambda line: None)
    seconds = time.monotonic() - start
    argvs = [plan.reframe_options(p, options.selection, 'r.json', 'prefix',
                                  0) for p in phases]
    os.environ['PATH'] = os.environ['PATH'].split(os.pathsep, 1)[1]
    return seconds, phases, argvs


def reframe_seconds(work: Path, phase, action: str, profile: Path | None,
                    name: str = ''):
    """Wall seconds of ReFrame's *action* on one phase, and the job scripts
    it wrote; CPU seconds go to stdout beside them."""
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
    print(f'  ({name}: {seconds:.1f} s wall, {used:.1f} s CPU)')
    return seconds, scripts


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
    parser.add_argument('--dry-run-nodes', type=int, default=50)
    parser.add_argument('--batch-nodes', type=int, default=1000)
    args = parser.parse_args(argv)
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
        # every batched session, end to end on a whole partition
        _, phases, _ = time_plan(work, args.batch_nodes)
        everything = 0.0
        for scope in ('node', 'pair', 'set', 'whole'):
            batched = [p for p in phases if p.scope == scope and not p.tag]
            total, cases = 0.0, 0
            for phase in batched:
                seconds, scripts = reframe_seconds(work, phase, '--dry-run',
                                                   None, phase.label)
                total, cases = total + seconds, cases + scripts
            everything += total
            print(f'{scope} phase, batch-job checks, {args.batch_nodes} '
                  f'nodes (--node-batch {plan.NODE_BATCH}): --dry-run '
                  f'{total:.1f} s for {cases} job scripts in '
                  f'{len(batched)} session(s)')
        print(f'all batched sessions: {everything:.1f} s')
        # what stays one case per node or pair: per case, on fewer nodes
        _, phases, _ = time_plan(work, args.dry_run_nodes)
        for label, scope in (('node phase, one-node checks', 'node'),
                             ('pair phase, one-pair checks', 'pair')):
            phase = next((p for p in phases if p.scope == scope
                          and p.tag == 'one'), None)
            if phase is None:
                print(f'{label}: none (every check of the scope batches)')
                continue
            dry, scripts = reframe_seconds(work, phase, '--dry-run', None,
                                           phase.label)
            print(f'{label}, {args.dry_run_nodes} nodes: --dry-run '
                  f'{dry:.1f} s for {scripts} job scripts '
                  f'({1000 * dry / max(scripts, 1):.0f} ms per test case; '
                  f'x{args.batch_nodes / args.dry_run_nodes:g} at '
                  f'{args.batch_nodes} nodes: '
                  f'{dry * args.batch_nodes / args.dry_run_nodes:.0f} s)')
        node_phase = next(p for p in phases if p.tag == 'one')
        profile = work / 'list.prof'
        reframe_seconds(work, node_phase, '--list', profile, 'profile')
        walk, total = stack_walk_share(profile)
        print(f'--list of the one-node checks under cProfile: {total:.1f} s, '
              f'of which inspect.stack (deprecation warnings) {walk:.1f} s '
              f'({100 * walk / total:.0f}%)')


if __name__ == '__main__':
    main()
