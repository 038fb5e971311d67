"""One job, several nodes, one measurement per group of nodes: a check
pinned to a batch of nodes (``-P pinned_nodes=n1,n2,...``) asks for all of
them in one job, with its own task layout on each, and runs its command
once per group: one job step per group, each in its own directory
``fanout/<group>/`` (the stage directory's files linked in, so that inputs
such as HPL.dat are found and report files such as HPCG's do not collide),
its stdout, stderr and exit code written there. Sanity and performance are
then read per group through the check's own parser.

A group is one node (node checks: every node at once) or a pair (pair
checks: the pin is a path around the ring, ``n1,n2,n3`` = pairs n1-n2 and
n2-n3). Pairs that share a node cannot run at once: they run in rounds of
node-disjoint pairs (path_rounds), one round after the other in the job.
Nodes that share what they measure (the Slurm sandbox's five nodes are
one host's cores) say so with the partition extra AT_ONCE: node checks
then run that many nodes at a time (node_rounds).

Only the launcher line changes: the executable and its options stay, and a
check pinned to one node runs exactly as before. Why: every ReFrame test
case costs ~70 ms of set-up (README "Acceptance at scale"), so one case per
check and node does not scale to a thousand nodes; one case per check and
batch does.

Step launchers (one per group, placed on its nodes only, K ranks each):
- srun: ``srun --nodes=1 --ntasks=K --nodelist=NODE``, a pair
  ``srun --nodes=2 --ntasks=2K --nodelist=A,B --ntasks-per-node=K`` (Slurm's
  srun manual, https://slurm.schedmd.com/srun.html); also where the check
  runs one process from the batch shell (the ``local`` launcher) on Slurm;
- Open MPI's mpirun/mpiexec: ``mpirun -np K --host NODE:K``, a pair
  ``-np 2K --host A:K,B:K``
  (https://docs.open-mpi.org/en/v5.0.x/man-openmpi/man1/mpirun.1.html,
  ``--host`` with slot counts).
"""
from __future__ import annotations

import shlex

from .launch import SLURM_SCHEDULERS

FANOUT_DIR = 'fanout'
STEP_OUT, STEP_ERR, STEP_EXIT = 'step.out', 'step.err', 'exit_code'
#: A step's exit code when its command was not found (POSIX shells).
NOT_FOUND_EXIT = 127


#: Between the nodes of a group's label ('hb-1+hb-2'); no host name holds
#: it (RFC 952 names: letters, digits, '-', '.').
GROUP_JOIN = '+'


def group_label(group: tuple[str, ...] | str) -> str:
    """'hb-1' for one node, 'hb-1+hb-2' for a pair."""
    return group if isinstance(group, str) else GROUP_JOIN.join(group)


def group_nodes(label: str) -> list[str]:
    return label.split(GROUP_JOIN)


def node_dir(label: str) -> str:
    """The directory of one group's step (one node: its name)."""
    return f'{FANOUT_DIR}/{label}'


#: Partition extra: at most this many nodes of a node check's batch job
#: measured at once (default: all). Only for nodes that are not
#: independent: on a cluster every node has its own cores and memory.
AT_ONCE = 'nodes_measured_at_once'


def node_rounds(labels: list[str], at_once: int | None
                ) -> list[list[str]] | None:
    """*labels* (nodes) in rounds of at most *at_once*, one round after
    the other; None (every node at once) when *at_once* is unset or
    covers them all."""
    if not at_once or at_once >= len(labels):
        return None
    if at_once < 1:
        raise ValueError(f'{AT_ONCE} must be 1 or more, got {at_once}')
    return [labels[start:start + at_once]
            for start in range(0, len(labels), at_once)]


def group_rounds(groups: list[tuple[str, ...]], at_once: int | None
                 ) -> list[list[str]] | None:
    """The labels of *groups* (nodes, or the pairs of a path) in rounds,
    one round after the other; None = every group at once. Pairs: rounds
    of node-disjoint pairs; nodes: rounds of at most *at_once*."""
    if groups and len(groups[0]) == 2:
        return [[group_label(pair) for pair in found]
                for found in path_rounds(groups)]
    return node_rounds([group_label(group) for group in groups], at_once)


def path_pairs(path: list[str]) -> list[tuple[str, str]]:
    """The pairs of a pin path: each node with the next one."""
    return [(path[i], path[i + 1]) for i in range(len(path) - 1)]


def node_groups(pinned: list[str], size: int) -> list[tuple[str, ...]]:
    """The groups a batch job measures: each pinned node, or (size 2)
    each node with the next one of the pin path."""
    return path_pairs(pinned) if size == 2 else [(node,) for node in pinned]


def path_rounds(pairs: list[tuple[str, str]]) -> list[list[tuple]]:
    """Rounds of node-disjoint pairs of a path: the pairs at even places,
    then the odd ones (a path's pair shares nodes with its neighbours
    only); a path that closes a ring of an odd number of pairs puts its
    last pair, which shares the first node with the first pair, in a
    third round."""
    even, odd = pairs[0::2], pairs[1::2]
    closing = []
    if len(pairs) > 2 and len(pairs) % 2 and set(pairs[-1]) & set(pairs[0]):
        closing = [even.pop()]
    return [found for found in (even, odd, closing) if found]


def step_launcher(launcher: str, scheduler: str, ranks: int,
                  cpus_per_task: int | None, options: list[str],
                  group: tuple[str, ...] | str) -> list[str] | None:
    """The launcher words of one group's job step, *ranks* ranks on each
    of its nodes; None where this launcher cannot place a step on these
    nodes of the allocation only."""
    nodes = [group] if isinstance(group, str) else list(group)
    if launcher == 'srun' or (launcher == 'local'
                              and scheduler in SLURM_SCHEDULERS):
        words = ['srun', f'--nodes={len(nodes)}',
                 f'--ntasks={ranks * len(nodes)}',
                 f"--nodelist={','.join(nodes)}"]
        if len(nodes) > 1:
            words.append(f'--ntasks-per-node={ranks}')
        if cpus_per_task:
            words.append(f'--cpus-per-task={cpus_per_task}')
        return words + (list(options) if launcher == 'srun' else [])
    if launcher in ('mpirun', 'mpiexec'):
        hosts = ','.join(f'{node}:{ranks}' for node in nodes)
        return [launcher, '-np', str(ranks * len(nodes)), '--host', hosts,
                *options]
    return None


def script_lines(labels: list[str], steps: dict[str, list[str]],
                 command: str, keep: tuple[str, ...],
                 rounds: list[list[str]] | None = None,
                 commands: dict[str, str] | None = None) -> list[str]:
    """Job script lines that start every group's step in the background,
    each in its own directory; *rounds* (default: all groups at once) run
    one after the other, each waiting for the previous one; the caller
    ends with ``wait``. *keep*: the stage directory's files not to link
    (the job's own stdout/stderr). *commands*: a group's whole command
    line instead of its step and *command* (a script that starts its own
    job steps, run from the batch shell)."""
    dirs = ' '.join(shlex.quote(node_dir(label)) for label in labels)
    skip = '|'.join(shlex.quote(name) for name in keep) or '""'
    lines = [
        f'mkdir -p {dirs}',
        'for f in *; do [ -f "$f" ] || continue; case "$f" in '
        f'{skip}) continue;; esac; for d in {dirs}; do '
        'ln -s "../../$f" "$d/$f"; done; done',
    ]
    for number, labels_of_round in enumerate(rounds or [labels]):
        if number:
            lines.append('wait')
        for label in labels_of_round:
            step = ' '.join(shlex.quote(word) for word in steps[label])
            line = (commands or {}).get(label) or f'{step} {command}'
            lines.append(
                f'(cd {shlex.quote(node_dir(label))} && {line} '
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
    """Why a group's step measured nothing (*node*: its label), or None
    when it ran the tool."""
    if exit_code is None:
        return f'the step on {node} never ended (no exit code written)'
    if exit_code == NOT_FOUND_EXIT:
        said = f': {stderr_tail}' if stderr_tail else ''
        return f'tool missing: not found on node {node}{said}'
    return None


def node_var(name: str, node: str) -> str:
    """The perf variable of *name* measured on *node* (a group's label)."""
    return f'{name}@{node}'
