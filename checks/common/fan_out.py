"""One job, several nodes, one measurement per node: a node-scope check
pinned to a batch of nodes (``-P pinned_nodes=n1,n2,...``) asks for all of
them in one job, with its single-node task layout on each, and runs its
command once per node, all at once: one job step per node, each in its own
directory ``fanout/<node>/`` (the stage directory's files linked in, so that
inputs such as HPL.dat are found and report files such as HPCG's do not
collide), its stdout, stderr and exit code written there. Sanity and
performance are then read per node through the check's own parser.

Only the launcher line changes: the executable and its options stay, and a
check pinned to one node runs exactly as before. Why: every ReFrame test
case costs ~70 ms of set-up (README "Acceptance at scale"), so one case per
check and node does not scale to a thousand nodes; one case per check and
batch does.

Step launchers (one per node, placed on that node only):
- srun: ``srun --nodes=1 --ntasks=K --nodelist=NODE`` (Slurm's srun
  manual, https://slurm.schedmd.com/srun.html); also where the check runs
  one process from the batch shell (the ``local`` launcher) on Slurm;
- Open MPI's mpirun/mpiexec: ``mpirun -np K --host NODE:K``
  (https://docs.open-mpi.org/en/v5.0.x/man-openmpi/man1/mpirun.1.html,
  ``--host`` with slot counts).
"""
from __future__ import annotations

import shlex

FANOUT_DIR = 'fanout'
STEP_OUT, STEP_ERR, STEP_EXIT = 'step.out', 'step.err', 'exit_code'
#: A step's exit code when its command was not found (POSIX shells).
NOT_FOUND_EXIT = 127
SLURM_SCHEDULERS = ('slurm', 'squeue')


def node_dir(node: str) -> str:
    return f'{FANOUT_DIR}/{node}'


def step_launcher(launcher: str, scheduler: str, ranks: int,
                  cpus_per_task: int | None, options: list[str], node: str
                  ) -> list[str] | None:
    """The launcher words of one node's job step; None where this launcher
    cannot place a step on one node of the allocation."""
    if launcher == 'srun' or (launcher == 'local'
                              and scheduler in SLURM_SCHEDULERS):
        words = ['srun', '--nodes=1', f'--ntasks={ranks}',
                 f'--nodelist={node}']
        if cpus_per_task:
            words.append(f'--cpus-per-task={cpus_per_task}')
        return words + (list(options) if launcher == 'srun' else [])
    if launcher in ('mpirun', 'mpiexec'):
        return [launcher, '-np', str(ranks), '--host', f'{node}:{ranks}',
                *options]
    return None


def script_lines(nodes: list[str], steps: dict[str, list[str]],
                 command: str, keep: tuple[str, ...]) -> list[str]:
    """Job script lines that start every node's step in the background,
    each in its own directory; the caller ends with ``wait``. *keep*: the
    stage directory's files not to link (the job's own stdout/stderr)."""
    dirs = ' '.join(shlex.quote(node_dir(node)) for node in nodes)
    skip = '|'.join(shlex.quote(name) for name in keep) or '""'
    lines = [
        f'mkdir -p {dirs}',
        'for f in *; do [ -f "$f" ] || continue; case "$f" in '
        f'{skip}) continue;; esac; for d in {dirs}; do '
        'ln -s "../../$f" "$d/$f"; done; done',
    ]
    for node in nodes:
        step = ' '.join(shlex.quote(word) for word in steps[node])
        lines.append(
            f'(cd {shlex.quote(node_dir(node))} && {step} {command} '
            f'> {STEP_OUT} 2> {STEP_ERR}; echo $? > {STEP_EXIT}) &')
    return lines


def read_exit_code(path: str) -> int | None:
    """A step's exit code; None when the step never ended (no file)."""
    try:
        with open(path) as fp:
            text = fp.read().strip()
    except OSError:
        return None
    return int(text) if text.lstrip('-').isdigit() else None


def last_line(path: str, limit: int = 64 * 1024) -> str:
    """The last non-empty line of a file (read from its last *limit*
    bytes), '' when there is none."""
    try:
        with open(path, 'rb') as fp:
            fp.seek(0, 2)
            fp.seek(max(0, fp.tell() - limit))
            tail = fp.read().decode(errors='replace')
    except OSError:
        return ''
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1] if lines else ''


def unmeasured_reason(node: str, exit_code: int | None,
                      stderr_tail: str) -> str | None:
    """Why a node's step measured nothing, or None when it ran the tool."""
    if exit_code is None:
        return f'the step on {node} never ended (no exit code written)'
    if exit_code == NOT_FOUND_EXIT:
        said = f': {stderr_tail}' if stderr_tail else ''
        return f'tool missing: not found on node {node}{said}'
    return None


def node_var(name: str, node: str) -> str:
    """The perf variable of *name* measured on *node*."""
    return f'{name}@{node}'
