"""What a job records about its nodes (into JobScript's variables:
job_script.py): the nodes it got (job_nodes.py), and, from one probe
script (node_probe.sh) run on every node before and after the run
(launch.on_every_node), each node's VM size from the metadata service
(vm_size.py) and its health sample and fingerprint (health_sampling.py).
The probe writes one file per node and phase; after the run the nodes file
and the probe's files are read, once each, and the readers of those
modules make the test's facts of them.

The job script starts with the line that records the nodes, then the probe
before the run; the probe after the run comes first after it. Nothing here
may fail a job; a local run records nothing.
"""
from __future__ import annotations

import os
import shlex
import shutil

import reframe.core.runtime as rt

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


def node_facts(test) -> dict:
    """What the probe recorded, for the test's measurements
    (measurements.TestFacts), with the partition's declared SKU."""
    partition = test.current_partition
    return {'vm_sku': partition.extras.get('vm_sku') if partition
            else None, 'job_nodes': tuple(test.job_nodes),
            'vm_sku_observed': test.vm_sku_observed or None,
            'node_vm_skus': dict(test.node_vm_skus),
            'vm_sku_mismatches': dict(test.vm_sku_mismatches),
            'node_fingerprints': dict(test.node_fingerprints),
            'health_rows': list(test.health_rows),
            'health_notes': dict(test.health_notes)}


def groups_of_another_sku(test, labels) -> dict[str, str]:
    """Group label (a node, 'a+b' a pair: fan_out.py) -> the VM size of
    its first node that is not what the partition declares, for each
    of *labels* that has one."""
    found = {}
    for label in labels:
        odd = [node for node in fan_out.group_nodes(label)
               if node in test.vm_sku_mismatches
               and node in test.node_vm_skus]
        if odd:
            found[label] = test.node_vm_skus[odd[0]]
    return found


def probe_around_the_run(test) -> None:
    """Before run: the job script's first lines record its nodes and
    probe each of them; its last line probes them again."""
    if test.is_local():
        return
    extras = test.current_partition.extras
    scheduler = test.job.scheduler.registered_name
    url = extras.get('vm_size_url') or ''
    if test.health_sampling or url:
        shutil.copy(PROBE, os.path.join(test.stagedir, PROBE_COPY))
        root = (test.health_sysfs_root
                or extras.get('health_sysfs_root') or '/sys')
        fingerprints = os.path.join(
            rt.runtime().stage_prefix, health_sampling.FINGERPRINTS_DIR,
            health_sampling.RUN_TOKEN)
        before = probe_command('before', root, fingerprints, url,
                               test.health_sampling)
        test.prerun_cmds.insert(
            0, launch.on_every_node(before, scheduler))
        if test.health_sampling:
            after = probe_command('after', root, fingerprints)
            test.postrun_cmds.insert(
                0, launch.on_every_node(after, scheduler))
        test.keep_files.append(health_sampling.SAMPLES_DIR)
    if test.pinned_nodes:
        test.job.pin_nodes = list(test.pinned_nodes)
    record = job_nodes.record_nodes_command(scheduler)
    if record:
        test.prerun_cmds.insert(0, record)
        test.keep_files.append(job_nodes.NODES_FILE)


def read_the_node_probe(test) -> None:
    """After run: the nodes file and the probe's files, once each."""
    if test.is_local():
        return
    extras = test.current_partition.extras
    test.job_nodes = job_nodes.read_nodes_file(
        os.path.join(test.stagedir, job_nodes.NODES_FILE))
    samples = health_sampling.as_job_nodes(
        health_sampling.samples_of(
            os.path.join(test.stagedir, health_sampling.SAMPLES_DIR)),
        test.job_nodes)
    test.node_samples = samples
    if test.health_sampling:
        health = health_sampling.assess(
            samples, test.job_nodes, extras.get('vm_sku'),
            test.nccl_version())
        test.health_findings, test.health_rows = health[:2]
        test.health_notes, test.node_fingerprints = health[2:]
    judge_vm_sizes(test, samples, extras.get('vm_sku', ''))


def judge_vm_sizes(test, samples: dict, declared: str) -> None:
    sizes = vm_size.node_sizes(samples, test.job_nodes)
    partition = vm_size.slurm_partition(test.current_partition)
    test.node_vm_skus = sizes
    for problem in vm_size.no_http_client(samples):
        test.logger.warning(f'{test.name}: VM size not recorded: '
                            f'{problem}')
    test.vm_sku_mismatches = {
        node: found for node, size in sizes.items()
        if (found := vm_size.mismatch(partition, declared, size, node))}
    if test.measures_each_node_alone():
        # fan_out_results.py judges each node by its own size
        test.vm_sku_observed = vm_size.batch_size(sizes, declared)
        return
    test.vm_sku_observed = next(iter(sizes.values()), '')
    if test.vm_sku_mismatches:
        found = '; '.join(test.vm_sku_mismatches.values())
        test.vm_sku_mismatch = found
        test.judge_without_verdict(found)
