"""The VM size each node says it is, next to the nodes the job records.

Every node of the job asks the Azure Instance Metadata Service (IMDS) for
``compute/vmSize`` once, in the node probe before the run (node_probe.sh,
with the ``Metadata: true`` header IMDS requires and a 2 s limit), and the
answer is the ``vm-size`` section of the node's ``before`` file; no answer,
or anything that is not a VM size, leaves nothing
(learn.microsoft.com/azure/virtual-machines/instance-metadata-service).
The URL is the partition's ``extras['vm_size_url']`` (config/systems:
CLUSTERPROOF_IMDS_URL, else IMDS itself on Azure; the sandbox asks only when
the variable is set). ``%n`` in it stands for the node's Slurm name, for
stand-ins that serve several fake nodes from one host. On Slurm every node
of the job asks for itself; elsewhere (PBS) only the node that runs the
batch script (launch.on_every_node).

A node whose size is not the partition's declared SKU is a mismatch: in a
job that measures its nodes together the job's results are informational
(``vm_sku_mismatch``); in a batch job that measures each node on its own
(fan_out_results.py) only that node's rows are (``vm_sku_mismatches``, node ->
why), as its one-node job's would be.
"""
from __future__ import annotations

import re

#: The section of a node's ``before`` file that holds IMDS's answer.
SECTION = 'vm-size'
_VM_SIZE = re.compile(r'^[A-Za-z][A-Za-z0-9_-]{0,79}$')

#: What a node without curl writes instead of its size (not a VM size:
#: it has spaces), so that the run says why the size is unknown.
NO_HTTP_CLIENT = 'no HTTP client: curl is not installed on'


def parse_vm_size(text: str) -> str:
    """IMDS's text answer -> the VM size; '' for anything else."""
    value = text.strip()
    return value if _VM_SIZE.match(value) else ''


def _answers(samples: dict) -> dict[str, str]:
    """{node: the vm-size section of its before sample} (samples:
    health_sampling.samples_of)."""
    return {node: entry['before'].text(SECTION)
            for node, entry in samples.items()
            if entry.get('before') is not None}


def node_sizes(samples: dict, nodes: list[str]) -> dict[str, str]:
    """{node: VM size} of the job's *nodes* that answered, in their order
    (every sampled node where the job recorded none)."""
    answers = _answers(samples)
    sizes = {}
    for node in nodes or sorted(answers):
        size = parse_vm_size(answers.get(node, ''))
        if size:
            sizes[node] = size
    return sizes


def no_http_client(samples: dict) -> list[str]:
    """What the job's nodes wrote when they had no curl to ask with."""
    said = []
    for text in _answers(samples).values():
        text = text.strip()
        if text.startswith(NO_HTTP_CLIENT) and text not in said:
            said.append(text)
    return said


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
