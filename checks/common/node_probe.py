"""What a job records about its nodes, in one plugin: the nodes it got
(job_nodes.py), and, from one probe script (node_probe.sh) run on every
node before and after the run (launch.on_every_node), each node's VM size
from the metadata service (vm_size.py) and its health sample and
fingerprint (health_sampling.py). The probe writes one file per node and
phase; after the run the nodes file and the probe's files are read, once
each, and the readers of those modules make the test's facts of them.

The job script starts with the line that records the nodes, then the probe
before the run; the probe after the run ends the script. Nothing here may
fail a job; a local run records nothing.
"""
from __future__ import annotations

import os
import shlex
import shutil

import reframe as rfm
import reframe.core.runtime as rt
import reframe.utility.typecheck as typ

from . import fan_out, health_sampling, job_nodes, launch, vm_size

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'node_probe.sh')
PROBE_COPY = 'clusterproof_node_probe.sh'
NO_HEALTH = 'no-health'


def probe_command(phase: str, sysfs_root: str, fingerprints: str,
                  vm_size_url: str = '', health: bool = True) -> str:
    """The shell command that probes the node it runs on (node_probe.sh's
    arguments), from the stage directory."""
    words = [phase, health_sampling.SAMPLES_DIR, sysfs_root, fingerprints]
    if vm_size_url or not health:
        words.append(vm_size_url)
    if not health:
        words.append(NO_HEALTH)
    return f'sh ./{PROBE_COPY} ' + ' '.join(shlex.quote(w) for w in words)


class NodeProbe(rfm.RegressionTestPlugin):
    #: Run on exactly these nodes (Slurm --nodelist); empty = anywhere.
    pinned_nodes = variable(typ.List[str], value=[])

    #: The nodes the job ran on, as its script recorded them.
    job_nodes = variable(typ.List[str], value=[])

    #: What IMDS said the job's (first) node is, or, in a batch job that
    #: measures each node on its own, the size the batch is judged as;
    #: '' = no answer.
    vm_sku_observed = variable(str, value='')

    #: Set when a node of a job that measures its nodes together differs
    #: from the partition's declared SKU.
    vm_sku_mismatch = variable(str, value='')

    #: Node -> what IMDS said it is, for every node that answered.
    node_vm_skus = variable(typ.Dict[str, str], value={})

    #: Node -> why it is not the partition's declared SKU (every node of
    #: the job that differs).
    vm_sku_mismatches = variable(typ.Dict[str, str], value={})

    #: Sample IB and GPU health before and after the run (-S
    #: health_sampling=false turns it off).
    health_sampling = variable(bool, value=True)

    #: Where the compute nodes' sysfs is; %n is the node's name. Empty: the
    #: partition's extras 'health_sysfs_root', else /sys.
    health_sysfs_root = variable(str, value='')

    #: The health findings of this run, per node (also in the run report,
    #: where acceptance reads them).
    health_findings = variable(typ.List[typ.Dict[str, object]], value=[])

    #: The rows the samples add (config/results/rows/builder.py stores them).
    health_rows = variable(typ.List[typ.Dict[str, object]], value=[],
                           loggable=False)

    #: Node -> what its health findings say, for the verdict of a failing
    #: value measured there.
    health_notes = variable(typ.Dict[str, str], value={}, loggable=False)

    #: Node -> fingerprint columns.
    node_fingerprints = variable(typ.Dict[str, typ.Dict[str, object]],
                                 value={}, loggable=False)

    #: Node -> {'before': Dump, 'after': Dump, 'kvp': bytes}: the probe's
    #: files as read once after the run (health_sampling.samples_of), for
    #: a check that reads more of them (per_gpu.py: the GPUs' names).
    node_samples = variable(dict, value={}, loggable=False)

    def node_facts(self) -> dict:
        """What the probe recorded, for the test's measurements
        (measurements.TestFacts), with the partition's declared SKU."""
        partition = self.current_partition
        return {'vm_sku': partition.extras.get('vm_sku') if partition
                else None, 'job_nodes': tuple(self.job_nodes),
                'vm_sku_observed': self.vm_sku_observed or None,
                'node_vm_skus': dict(self.node_vm_skus),
                'vm_sku_mismatches': dict(self.vm_sku_mismatches),
                'node_fingerprints': dict(self.node_fingerprints),
                'health_rows': list(self.health_rows),
                'health_notes': dict(self.health_notes)}

    def measures_each_node_alone(self) -> bool:
        """True where a batch job measures each node on its own
        (fanned_job.py says so); each node is then judged by its own
        size."""
        return False

    def judge_without_verdict(self, reason: str) -> None:
        """A node of the job is not the partition's SKU: a check judged
        against references shows its values without a verdict
        (sku_references.py); nothing to do for one without."""

    def nccl_version(self) -> str | None:
        """The NCCL version the run used, for the fingerprint; None for a
        check that runs no NCCL (checks/gpu/nccl.py says)."""
        return None

    def groups_of_another_sku(self, labels) -> dict[str, str]:
        """Group label (a node, 'a+b' a pair: fan_out.py) -> the VM size of
        its first node that is not what the partition declares, for each
        of *labels* that has one."""
        found = {}
        for label in labels:
            odd = [node for node in fan_out.group_nodes(label)
                   if node in self.vm_sku_mismatches
                   and node in self.node_vm_skus]
            if odd:
                found[label] = self.node_vm_skus[odd[0]]
        return found

    def probe_around_the_run(self) -> None:
        """Before run: the job script's first lines record its nodes and
        probe each of them; its last line probes them again."""
        if self.is_local():
            return
        extras = self.current_partition.extras
        scheduler = self.job.scheduler.registered_name
        url = extras.get('vm_size_url') or ''
        if self.health_sampling or url:
            shutil.copy(PROBE, os.path.join(self.stagedir, PROBE_COPY))
            root = (self.health_sysfs_root
                    or extras.get('health_sysfs_root') or '/sys')
            fingerprints = os.path.join(
                rt.runtime().stage_prefix, health_sampling.FINGERPRINTS_DIR,
                health_sampling.RUN_TOKEN)
            before = probe_command('before', root, fingerprints, url,
                                   self.health_sampling)
            self.prerun_cmds.insert(
                0, launch.on_every_node(before, scheduler))
            if self.health_sampling:
                after = probe_command('after', root, fingerprints)
                self.postrun_cmds.insert(
                    0, launch.on_every_node(after, scheduler))
            self.keep_files.append(health_sampling.SAMPLES_DIR)
        if self.pinned_nodes:
            self.job.pin_nodes = list(self.pinned_nodes)
        record = job_nodes.record_nodes_command(scheduler)
        if record:
            self.prerun_cmds.insert(0, record)
            self.keep_files.append(job_nodes.NODES_FILE)

    def read_the_node_probe(self) -> None:
        """After run: the nodes file and the probe's files, once each."""
        if self.is_local():
            return
        extras = self.current_partition.extras
        self.job_nodes = job_nodes.read_nodes_file(
            os.path.join(self.stagedir, job_nodes.NODES_FILE))
        samples = health_sampling.as_job_nodes(
            health_sampling.samples_of(
                os.path.join(self.stagedir, health_sampling.SAMPLES_DIR)),
            self.job_nodes)
        self.node_samples = samples
        if self.health_sampling:
            health = health_sampling.assess(
                samples, self.job_nodes, extras.get('vm_sku'),
                self.nccl_version())
            self.health_findings, self.health_rows = health[:2]
            self.health_notes, self.node_fingerprints = health[2:]
        self._judge_vm_sizes(samples, extras.get('vm_sku', ''))

    def _judge_vm_sizes(self, samples: dict, declared: str) -> None:
        sizes = vm_size.node_sizes(samples, self.job_nodes)
        partition = vm_size.slurm_partition(self.current_partition)
        self.node_vm_skus = sizes
        for problem in vm_size.no_http_client(samples):
            self.logger.warning(f'{self.name}: VM size not recorded: '
                                f'{problem}')
        self.vm_sku_mismatches = {
            node: found for node, size in sizes.items()
            if (found := vm_size.mismatch(partition, declared, size, node))}
        if self.measures_each_node_alone():
            # fanned_job.py judges each node by its own size
            self.vm_sku_observed = vm_size.batch_size(sizes, declared)
            return
        self.vm_sku_observed = next(iter(sizes.values()), '')
        if self.vm_sku_mismatches:
            found = '; '.join(self.vm_sku_mismatches.values())
            self.vm_sku_mismatch = found
            self.judge_without_verdict(found)
