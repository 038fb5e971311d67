"""Which nodes a test's job runs on: pinned on request, recorded by the job.

ReFrame's Slurm backend takes a job's node list from its first ``sacct``
poll, which can hold only the first node of a multi-node job. A per-node
verdict needs better: the job script itself writes the nodes it was given
(``scontrol show hostnames "$SLURM_JOB_NODELIST"``, or ``$PBS_NODEFILE``)
into a file of the stage directory, and the test reads it back after the
run. ``clusterproof acceptance`` pins tests to one node or a node pair with
``-P pinned_nodes=...``.
"""
from __future__ import annotations

from .launch import SLURM_SCHEDULERS

NODES_FILE = 'clusterproof_job_nodes.txt'

# What a job script runs to write the nodes it was given, by scheduler
# (ReFrame's registered name); a scheduler missing here records nothing.
RECORD_NODES = {
    **{name: 'scontrol show hostnames "$SLURM_JOB_NODELIST"'
       for name in SLURM_SCHEDULERS},
    'pbs': 'sort -u "$PBS_NODEFILE"',
    'torque': 'sort -u "$PBS_NODEFILE"',
}


def record_nodes_command(scheduler: str) -> str | None:
    command = RECORD_NODES.get(scheduler)
    return f'{command} > {NODES_FILE} 2>/dev/null' if command else None


def read_nodes_file(path: str) -> list[str]:
    """Node names, one a line, in order; [] when the file is absent."""
    try:
        with open(path, errors='replace') as fp:
            names = [line.strip() for line in fp]
    except OSError:
        return []
    return list(dict.fromkeys(name for name in names if name))

