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

import os

import reframe as rfm
import reframe.utility.typecheck as typ

NODES_FILE = 'clusterproof_job_nodes.txt'

# What a job script runs to write the nodes it was given, by scheduler
# (ReFrame's registered name); a scheduler missing here records nothing.
RECORD_NODES = {
    'slurm': 'scontrol show hostnames "$SLURM_JOB_NODELIST"',
    'squeue': 'scontrol show hostnames "$SLURM_JOB_NODELIST"',
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


class JobNodes(rfm.RegressionTestPlugin):
    #: Run on exactly these nodes (Slurm --nodelist); empty = anywhere.
    pinned_nodes = variable(typ.List[str], value=[])

    #: The nodes the job ran on, as its script recorded them.
    job_nodes = variable(typ.List[str], value=[])

    @run_before('run')
    def _pin_and_record_nodes(self):
        if self.is_local():
            return
        if self.pinned_nodes:
            self.job.pin_nodes = list(self.pinned_nodes)
        record = record_nodes_command(self.job.scheduler.registered_name)
        if record:
            self.prerun_cmds.insert(0, record)
            self.keep_files.append(NODES_FILE)

    @run_after('run')
    def _read_job_nodes(self):
        if not self.is_local():
            self.job_nodes = read_nodes_file(
                os.path.join(self.stagedir, NODES_FILE))
