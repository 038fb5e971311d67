"""How a check's ranks are launched, placed and pinned: the one place that
knows each launcher's spelling (srun, Open MPI's mpirun/mpiexec, local).

- ``binding_options(launcher, unit, threads)``: pin each rank to its own
  core(s) (``unit='core'``) or to its NUMA domain (``'numa'``). Slurm's
  ``--cpu-bind=ldoms`` binds a task to the locality domain of the CPUs it
  was given, and srun's default distribution across sockets is cyclic
  (``block:cyclic``), which would spread consecutive ranks (GPU i, GPU i+1)
  over different domains: NUMA binding therefore comes with an explicit
  ``--distribution=block:block``, the srun spelling of Open MPI's
  ``--map-by ppr:N:node --bind-to numa``.
- ``one_rank_per_node(launcher)``: what places one rank on each node.
- ``single_process(launcher)``: the launcher one multi-threaded process
  needs (mpirun would bind it to one core; srun keeps --cpus-per-task).
- ``on_every_node(command, scheduler)``: the job-script line that runs a
  shell command once on every node of the job (the node probe's).

[] / None: a launcher whose flags we do not know (the row then says so).
"""
from __future__ import annotations

from reframe.core.backends import getlauncher

OPEN_MPI = ('mpirun', 'mpiexec')
#: ReFrame's two Slurm schedulers: 'slurm' polls sacct, 'squeue' works
#: without accounting.
SLURM_SCHEDULERS = ('slurm', 'squeue')


def binding_options(launcher: str, unit: str = 'core',
                    threads_per_task: int = 1) -> list[str]:
    if unit not in ('core', 'numa'):
        raise ValueError(f'binding unit {unit!r}: core or numa')
    if launcher == 'srun':
        if unit == 'numa':
            return ['--distribution=block:block', '--cpu-bind=ldoms']
        # with --cpus-per-task, 'cores' pins each rank to its own cores
        return ['--cpu-bind=cores']
    if launcher in OPEN_MPI:
        # Open MPI's spelling (HPC-X and Debian's mpirun are Open MPI)
        if unit == 'numa':
            return ['--map-by', 'numa', '--bind-to', 'numa']
        if threads_per_task > 1:
            return ['--map-by', f'slot:PE={threads_per_task}',
                    '--bind-to', 'core']
        return ['--bind-to', 'core']
    return []


#: Launcher -> options that place one rank on each node
ONE_RANK_PER_NODE = {
    'srun': [],                 # --ntasks-per-node=1 is in the job script
    'mpirun': ['--map-by', 'ppr:1:node'],
    'mpiexec': ['--map-by', 'ppr:1:node'],
    'local': [],
}


def one_rank_per_node(launcher: str) -> list[str] | None:
    return ONE_RANK_PER_NODE.get(launcher)


def single_process(job) -> None:
    """Give one multi-threaded process the launcher it needs."""
    if job.launcher.registered_name in OPEN_MPI:
        job.launcher = getlauncher('local')()


def batch_shell(job) -> None:
    """Scripts that start their own job steps run from the batch shell."""
    job.launcher = getlauncher('local')()


def add_options(job, options: list[str]) -> None:
    for option in options:
        if option not in job.launcher.options:
            job.launcher.options.append(option)


def on_every_node(command: str, scheduler: str) -> str:
    """The job-script line that runs the shell *command* once on every node
    of the job, from the stage directory. On Slurm, in a job of several
    nodes, one ``srun --overlap`` step with one task on each node
    (https://slurm.schedmd.com/srun.html, ``--overlap``: beside the job's
    own steps), and the batch script's node alone where that step cannot
    start; in a one-node job, and elsewhere (PBS, local), the node that
    runs the batch script. Its output is dropped and it never fails the
    job."""
    if scheduler in SLURM_SCHEDULERS:
        command = (f'if [ "${{SLURM_JOB_NUM_NODES:-1}}" -gt 1 ]; then '
                   f'srun --overlap --nodes="$SLURM_JOB_NUM_NODES" '
                   f'--ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 '
                   f'{command} || {command}; else {command}; fi')
    return f'{{ {command}; }} >/dev/null 2>&1 || true'
