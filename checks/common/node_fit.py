"""Skip, at submission, a job that no node of the partition can ever hold.

Slurm accepts a job asking for more CPUs per node than the partition's nodes
have and keeps it pending (reason ``PartitionConfig``) forever; ReFrame then
waits for it forever. A default ``max_pending_time`` would also cancel
legitimate waits on a busy cluster, so the request is compared with what the
partition declares its nodes have instead: ReFrame's processor info
(``processor.num_cpus``), else the partition's ``cores_per_node`` extra.
Where neither is declared nothing is skipped. The local scheduler starts
whatever it is given, so it is never skipped there.
"""
from __future__ import annotations



def cpus_per_node_requested(tasks_per_node: int | None,
                            cpus_per_task: int | None) -> tuple[int, str]:
    """The CPUs one node must hold for the request, and how it was counted."""
    cpus = cpus_per_task or 1
    if tasks_per_node:
        return (tasks_per_node * cpus,
                f'{tasks_per_node} task(s) x {cpus} CPU(s) = '
                f'{tasks_per_node * cpus} CPUs per node')
    return cpus, f'{cpus} CPUs per task'


def unsatisfiable_reason(name: str, partition: str, node_cpus: int | None,
                         source: str, tasks_per_node: int | None,
                         cpus_per_task: int | None, hint: str = '') -> str | None:
    """Why ``name`` can never start on ``partition``, or None when it fits
    (or when the nodes' size is unknown)."""
    if not node_cpus:
        return None
    wanted, how = cpus_per_node_requested(tasks_per_node, cpus_per_task)
    if wanted <= node_cpus:
        return None
    reason = (f'{name} asks for {how}, but the nodes '
              f'of {partition} have {node_cpus} ({source}): the scheduler '
              'would keep the job pending forever')
    return f'{reason}; {hint}' if hint else reason


def declared_node_cpus(partition) -> tuple[int | None, str]:
    num_cpus = partition.processor.num_cpus
    if num_cpus:
        return num_cpus, 'processor.num_cpus'
    cores = partition.extras.get('cores_per_node')
    if cores:
        return cores, "extras['cores_per_node']"
    return None, ''

