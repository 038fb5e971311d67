"""How long each GPU tier holds a node: the sum of its checks' declared
limits (issue 39, item 7).

The quick tier is the GPU checks tagged ``daily`` and the full tier those
tagged ``acceptance``. Every test case of a tier that runs on one node
(inventory, NVLink, DCGM, copy bandwidth, compute, the one-VM NCCL runs)
holds that node for at most its job's wall-clock limit: the check's
declared runtime times its safety factor plus the start margin
(checks/common/time_limit.py), or the limit the check fixes itself (DCGM).
The per-node time of a tier is the sum of those limits, as the job scripts
of a ReFrame dry run write them (``#SBATCH --time``, ``#PBS -l walltime``).
Checks across nodes (NcclMultiNode, GpuFabricBandwidth) are listed apart:
they hold several nodes at once.

    python -m checks.gpu.tiers --system azure:ndv5

A limit is an upper bound, not a measurement: a healthy run takes about a
third of it less the margin (the declared runtime).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

TIERS = {'quick': 'daily', 'full': 'acceptance'}

_SLURM_TIME = re.compile(r'^#SBATCH --time=(\S+)\s*$', re.M)
_PBS_TIME = re.compile(r'^#PBS -l (?:\S+,)?walltime=([0-9:]+)', re.M)
_NODES = re.compile(r'^#SBATCH --nodes=(\d+)', re.M)
_TASKS = re.compile(r'^#SBATCH --ntasks=(\d+)\s*$', re.M)
_TASKS_PER_NODE = re.compile(r'^#SBATCH --ntasks-per-node=(\d+)\s*$', re.M)
_ANSI = re.compile(r'\x1b\[[0-9;]*m')
_DRY = re.compile(r'\[\s*DRY\s*\] (\S+)((?: %\S+)*) /(\w+) @(\S+?):(\S+?)\+(\S+)')


@dataclass(frozen=True)
class Job:
    """One test case of a tier: its name, the nodes its job holds and its
    wall-clock limit in seconds (None: the script sets none)."""
    name: str
    nodes: int
    limit_s: int | None


def clock_seconds(text: str, bare_unit_s: int = 60) -> int | None:
    """A job's time limit in seconds: 'H:M:S', 'M:S', or a bare number of
    *bare_unit_s* (Slurm's --time reads it as minutes, PBS's walltime as
    seconds); None for anything else. '0:20:0' -> 1200."""
    parts = text.split(':')
    if len(parts) > 3 or not all(part.isdigit() for part in parts):
        return None
    if len(parts) == 1:
        return int(parts[0]) * bare_unit_s
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds


def job_limit_seconds(script: str) -> int | None:
    """The wall-clock limit a job script asks for, in seconds."""
    slurm = _SLURM_TIME.search(script)
    if slurm:
        return clock_seconds(slurm.group(1), 60)
    pbs = _PBS_TIME.search(script)
    return clock_seconds(pbs.group(1), 1) if pbs else None


def job_nodes(script: str) -> int:
    """How many nodes a Slurm job script holds (1 when it does not say)."""
    nodes = _NODES.search(script)
    if nodes:
        return int(nodes.group(1))
    tasks, per_node = _TASKS.search(script), _TASKS_PER_NODE.search(script)
    if tasks and per_node and int(per_node.group(1)) > 0:
        return max(1, -(-int(tasks.group(1)) // int(per_node.group(1))))
    return 1


def node_seconds(jobs: list[Job]) -> int:
    """A tier's time on one node: the sum of its one-node jobs' limits."""
    return sum(job.limit_s or 0 for job in jobs if job.nodes == 1)


def clock_text(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f'{hours} h {rest // 60:02d} min' if hours else \
        f'{rest // 60} min'


def dry_run_jobs(system: str, tag: str, repo: Path) -> list[Job]:
    """The test cases of the GPU checks tagged *tag* on *system*, from
    their job scripts in a ReFrame dry run (nothing is submitted)."""
    with tempfile.TemporaryDirectory(prefix='clusterproof-tiers-') as tmp:
        env = {**os.environ, 'CLUSTERPROOF_HOME': str(Path(tmp) / 'home')}
        reframe = Path(sys.executable).parent / 'reframe'
        command = [str(reframe), '-C',
                   str(repo / 'config' / 'config.py'), '--system', system,
                   '-c', str(repo / 'checks' / 'gpu'), '-t', tag,
                   '--dry-run', '--prefix', str(Path(tmp) / 'rfm')]
        result = subprocess.run(command, env=env, cwd=repo, text=True,
                                capture_output=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f'reframe --dry-run failed:\n{result.stdout}'
                               f'{result.stderr}')
        jobs = []
        for match in _DRY.finditer(_ANSI.sub('', result.stdout)):
            name, params, digest, sysname, part, environ = match.groups()
            # a parameterised test's stage is <name>_<hash>, another's
            # <name>; a test skipped before its script was written has none
            stages = Path(tmp) / 'rfm' / 'stage' / sysname / part / environ
            scripts = [stages / folder / 'rfm_job.sh'
                       for folder in (f'{name}_{digest}', name)
                       if (stages / folder / 'rfm_job.sh').exists()]
            if not scripts:
                continue
            script = scripts[0].read_text()
            jobs.append(Job(f'{name}{params}', job_nodes(script),
                            job_limit_seconds(script)))
        return jobs


def report(system: str, tiers: dict[str, list[Job]]) -> str:
    lines = []
    for tier, jobs in tiers.items():
        lines.append(f'{tier} tier (-t {TIERS[tier]}) on {system}: '
                     f'{clock_text(node_seconds(jobs))} per node, the sum '
                     f'of {sum(j.nodes == 1 for j in jobs)} one-node '
                     'job limits')
        for job in sorted(jobs, key=lambda j: (j.nodes > 1, j.name)):
            limit = clock_text(job.limit_s) if job.limit_s else 'no limit'
            where = '' if job.nodes == 1 else \
                f' (across {job.nodes} nodes, not in the sum)'
            lines.append(f'  {job.name:<52} {limit}{where}')
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m checks.gpu.tiers',
        description='Per-node time of the quick and full GPU tiers: the '
                    'sum of their checks\' declared job limits.')
    parser.add_argument('--system', required=True,
                        help='ReFrame system:partition, e.g. azure:ndv5')
    args = parser.parse_args(argv)
    repo = Path(__file__).resolve().parents[2]
    tiers = {tier: dry_run_jobs(args.system, tag, repo)
             for tier, tag in TIERS.items()}
    print(report(args.system, tiers))
    return 0


if __name__ == '__main__':
    sys.exit(main())
