"""The VM size the node says it is, next to the nodes the job records.

The job script asks the Azure Instance Metadata Service (IMDS) for
``compute/vmSize`` with the ``Metadata: true`` header IMDS requires and a
2 s limit, and writes what it answered into a file of the stage directory;
no answer, or anything that is not a VM size, leaves nothing
(learn.microsoft.com/azure/virtual-machines/instance-metadata-service).
The URL is the partition's ``extras['vm_size_url']`` (config/systems:
CLUSTERPROOF_IMDS_URL, else IMDS itself on Azure; the sandbox asks only when
the variable is set). ``%n`` in it stands for the node's Slurm name, for
stand-ins that serve several fake nodes from one host.

The batch script runs on the job's first node, so a multi-node job records
that node's size, and so does a batch job of acceptance's node phase
(fanned_job.py); with ``--node-batch 1`` (one job per node) acceptance
records every node's.

Rows carry the answer in ``vm_sku_observed``; references are looked up for
it after the run, and a node whose size is not the partition's declared SKU
is named in ``vm_sku_mismatch``, its results informational.
"""
from __future__ import annotations

import os
import re
import shlex

import reframe as rfm

from .job_nodes import NODES_FILE, read_nodes_file

VM_SIZE_FILE = 'clusterproof_vm_size.txt'
TIMEOUT_S = 2
NODE_PLACEHOLDER = '%n'
_VM_SIZE = re.compile(r'^[A-Za-z][A-Za-z0-9_-]{0,79}$')


def record_command(url: str) -> str:
    """Shell that writes the VM size IMDS reports (or nothing) to
    VM_SIZE_FILE; never fails the job."""
    parts = [shlex.quote(piece) for piece in url.split(NODE_PLACEHOLDER)]
    quoted = '"${SLURMD_NODENAME:-$(hostname -s)}"'.join(parts)
    return (f"curl -s -f -m {TIMEOUT_S} -H 'Metadata: true' --noproxy '*' "
            f"{quoted} > {VM_SIZE_FILE} 2>/dev/null || true")


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


def mismatch(partition: str, declared: str, observed: str, node: str) -> str:
    """'' when the node is what the partition declares (or unknown)."""
    if not declared or not observed or declared.lower() == observed.lower():
        return ''
    return (f'partition {partition} declares {declared}, node {node} is '
            f'{observed}')


def slurm_partition(partition) -> str:
    """The scheduler's name of a ReFrame partition (--partition=...), else
    ReFrame's own."""
    for option in partition.access:
        if option.startswith('--partition='):
            return option.split('=', 1)[1]
    return partition.name


class VmSize(rfm.RegressionTestPlugin):
    #: What IMDS said the job's (first) node is; '' = no answer.
    vm_sku_observed = variable(str, value='')

    #: Set when that differs from the partition's declared SKU.
    vm_sku_mismatch = variable(str, value='')

    @run_before('run')
    def _record_vm_size(self):
        url = self.current_partition.extras.get('vm_size_url')
        if self.is_local() or not url:
            return
        self.prerun_cmds.insert(0, record_command(url))  # before any cd
        self.keep_files.append(VM_SIZE_FILE)

    @run_after('run')
    def _read_vm_size(self):
        if self.is_local():
            return
        self.vm_sku_observed = read_vm_size(
            os.path.join(self.stagedir, VM_SIZE_FILE))
        nodes = read_nodes_file(os.path.join(self.stagedir, NODES_FILE))
        found = mismatch(slurm_partition(self.current_partition),
                         self.current_partition.extras.get('vm_sku', ''),
                         self.vm_sku_observed, (nodes or ['?'])[0])
        if found:
            self.vm_sku_mismatch = found
            if hasattr(self, 'no_verdict_reasons'):  # checks with references
                self.no_verdict_reasons = list(self.no_verdict_reasons) + [
                    found]
