"""The VM size each node says it is, next to the nodes the job records.

The job script asks the Azure Instance Metadata Service (IMDS) for
``compute/vmSize`` with the ``Metadata: true`` header IMDS requires and a
2 s limit, and writes what it answered into a file of the stage directory;
no answer, or anything that is not a VM size, leaves nothing
(learn.microsoft.com/azure/virtual-machines/instance-metadata-service).
The URL is the partition's ``extras['vm_size_url']`` (config/systems:
CLUSTERPROOF_IMDS_URL, else IMDS itself on Azure; the sandbox asks only when
the variable is set). ``%n`` in it stands for the node's Slurm name, for
stand-ins that serve several fake nodes from one host.

IMDS answers for the VM that asks, so every node asks for itself, once: on
Slurm, in a job of several nodes, one ``srun --overlap`` step with a task on
each node, each writing ``VM_SIZES_DIR/<node>.txt``
(https://slurm.schedmd.com/srun.html, ``--overlap``); in a one-node job (or
when that step fails) the batch script, on the job's first node
(VM_SIZE_FILE). Elsewhere (PBS) only the first node's size is known.

A node whose size is not the partition's declared SKU is a mismatch: in a
job that measures its nodes together the job's results are informational
(``vm_sku_mismatch``); in a batch job that measures each node on its own
(fanned_job.py) only that node's rows are (``vm_sku_mismatches``, node ->
why), as its one-node job's would be.
"""
from __future__ import annotations

import os
import re
import shlex


from .launch import SLURM_SCHEDULERS

VM_SIZE_FILE = 'clusterproof_vm_size.txt'
VM_SIZES_DIR = 'clusterproof_vm_sizes'
TIMEOUT_S = 2
NODE_PLACEHOLDER = '%n'
_NODE_NAME = '"${SLURMD_NODENAME:-$(hostname -s)}"'
_VM_SIZE = re.compile(r'^[A-Za-z][A-Za-z0-9_-]{0,79}$')


#: What a node without curl writes instead of its size (not a VM size:
#: it has spaces), so that the run says why the size is unknown.
NO_HTTP_CLIENT = 'no HTTP client: curl is not installed on'


def _ask(url: str, into: str) -> str:
    parts = [shlex.quote(piece) for piece in url.split(NODE_PLACEHOLDER)]
    missing = f'{NO_HTTP_CLIENT} {_NODE_NAME}'
    return (f"if command -v curl >/dev/null 2>&1; then "
            f"curl -s -f -m {TIMEOUT_S} -H 'Metadata: true' --noproxy '*' "
            f"{_NODE_NAME.join(parts)} > {into} 2>/dev/null || true; "
            f'else echo "{missing}" | tee {into} >&2; fi')


def record_command(url: str) -> str:
    """Shell that writes the VM size IMDS reports to the node running the
    batch script (or nothing) to VM_SIZE_FILE; never fails the job."""
    return _ask(url, VM_SIZE_FILE)


def record_every_node_command(url: str) -> str:
    """Shell that has every node of a Slurm job ask once: in a job of
    several nodes each writes its own VM size to VM_SIZES_DIR/<node>.txt
    (the batch script's node among them, not asked again), in a one-node
    job (or when that step fails) the batch script's node writes
    VM_SIZE_FILE; never fails the job."""
    ask = _ask(url, f'{VM_SIZES_DIR}/{_NODE_NAME}.txt')
    first = record_command(url)
    return (f'if [ "${{SLURM_JOB_NUM_NODES:-1}}" -gt 1 ]; then '
            f'mkdir -p {VM_SIZES_DIR} && srun --overlap '
            f'--nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" '
            f'--ntasks-per-node=1 '
            f'sh -c {shlex.quote(ask)} >/dev/null 2>&1 || {first}; '
            f'else {first}; fi')


def parse_vm_size(text: str) -> str:
    """IMDS's text answer -> the VM size; '' for anything else."""
    value = text.strip()
    return value if _VM_SIZE.match(value) else ''


def read_vm_size(path: str) -> str:
    try:
        with open(path, errors='replace') as fp:
            return parse_vm_size(fp.read(200))
    except OSError:
        return ''


def no_http_client(stagedir: str) -> list[str]:
    """What the job's nodes wrote when they had no curl to ask with."""
    paths = [os.path.join(stagedir, VM_SIZE_FILE)]
    folder = os.path.join(stagedir, VM_SIZES_DIR)
    if os.path.isdir(folder):
        paths += [os.path.join(folder, name)
                  for name in sorted(os.listdir(folder))]
    said = []
    for path in paths:
        try:
            with open(path, errors='replace') as fp:
                text = fp.read(300).strip()
        except OSError:
            continue
        if text.startswith(NO_HTTP_CLIENT) and text not in said:
            said.append(text)
    return said


def read_node_sizes(stagedir: str, nodes: list[str]) -> dict[str, str]:
    """{node: VM size} of the job's *nodes* that answered: each node's own
    file, else (the first node) the batch script's."""
    sizes = {}
    for index, node in enumerate(nodes):
        size = read_vm_size(os.path.join(stagedir, VM_SIZES_DIR,
                                         f'{node}.txt'))
        if not size and index == 0:
            size = read_vm_size(os.path.join(stagedir, VM_SIZE_FILE))
        if size:
            sizes[node] = size
    return sizes


def mismatch(partition: str, declared: str, observed: str, node: str) -> str:
    """'' when the node is what the partition declares (or unknown)."""
    if not declared or not observed or declared.lower() == observed.lower():
        return ''
    return (f'partition {partition} declares {declared}, node {node} is '
            f'{observed}')


def batch_size(sizes: dict[str, str], declared: str) -> str:
    """The size a batch of separately measured nodes is judged as: the
    declared one where a node reported it, else the first node's."""
    for size in sizes.values():
        if size.lower() == declared.lower():
            return size
    return next(iter(sizes.values()), '')


def slurm_partition(partition) -> str:
    """The scheduler's name of a ReFrame partition (--partition=...), else
    ReFrame's own."""
    for option in partition.access:
        if option.startswith('--partition='):
            return option.split('=', 1)[1]
    return partition.name



def job_line(url: str, scheduler: str) -> tuple[str, list[str]]:
    """The job-script line that has the job's nodes ask their VM size, and
    the files of the stage directory it writes."""
    if scheduler in SLURM_SCHEDULERS:
        return record_every_node_command(url), [VM_SIZES_DIR, VM_SIZE_FILE]
    return record_command(url), [VM_SIZE_FILE]
