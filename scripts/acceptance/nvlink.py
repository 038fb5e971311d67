"""NVLink domains (GB200/GB300 NVL72 racks) in acceptance's set scope.

The node phase runs NvlinkFabric on every node first; the NVLink domain
each node records (checks/gpu/nvlink_fabric.py) splits the partition's set
phase: NcclMultiNode runs once per domain of two nodes or more, expecting
multi-node NVLink (the partition's default fabric), with GpuFabricBandwidth
beside it (checks/gpu/fabric_bandwidth.py: every GPU's bandwidth inside the
domain), and NcclMultiNode once over one node
of each domain, expecting InfiniBand with GPUDirect RDMA (-S fabric=ib);
the other set checks run over every node as before. Each run is a finding
of its own, labelled with its domain, so that a rack's failure is never
confused with the network's between racks. A partition whose nodes record
no domain (or only single-node ones) keeps its one set phase.

Slurm's block topology (``scontrol show topology``, ``--segment``) is not
used yet: the node list comes from the nodes' own fabric records.
"""
from __future__ import annotations

import re

from .plan import DOMAIN_CHECKS, SET_CHECKS, Phase, names_pattern
from .verdicts import case_nodes, class_name

FABRIC_CHECK = 'NvlinkFabric'
MULTINODE_CHECK = 'NcclMultiNode'
CROSS_TAG = 'across-nvlink-domains'
#: Before the short name of a domain in its set session's tag.
DOMAIN_TAG_PREFIX = 'nvlink-'


def node_domains(cases: list[dict]) -> dict[str, str]:
    """{node: NVLink domain} of the nodes whose fabric check passed."""
    found = {}
    for case in cases:
        nodes = case_nodes(case)
        if (class_name(case) == FABRIC_CHECK and case.get('result') == 'pass'
                and case.get('nvlink_domain') and len(nodes) == 1):
            found[nodes[0]] = case['nvlink_domain']
    return found


def domain_tag(domain: str) -> str:
    """A short file-safe name: the ClusterUUID's first 8 characters, or
    the Slurm block's name."""
    if domain.startswith('block:'):
        name = domain[len('block:'):]
    else:
        name = domain.split('/')[0][:8]
    return DOMAIN_TAG_PREFIX + re.sub(r'[^A-Za-z0-9_.]+', '-', name)[:24]


def split_set_phase(phase: Phase, domains: dict[str, str]) -> list[Phase]:
    if phase.scope != 'set' or not phase.pins:
        return [phase]
    nodes = list(phase.pins[0])
    groups: dict[str, list[str]] = {}
    for node in nodes:
        if node in domains:
            groups.setdefault(domains[node], []).append(node)
    if not groups:
        return [phase]
    others = [name for name in SET_CHECKS if name != MULTINODE_CHECK]
    only_multinode = ['-x', names_pattern(others)]
    found = []
    for domain, members in groups.items():
        if len(members) >= 2:
            found.append(Phase(phase.system, phase.partition, 'set',
                               [tuple(members)], tag=domain_tag(domain),
                               names=SET_CHECKS + DOMAIN_CHECKS,
                               options=only_multinode + [
                                   option for name in DOMAIN_CHECKS
                                   for option in (
                                       '-S', f'{name}.num_nodes='
                                       f'{len(members)}',
                                       '-S', f'{name}.nvlink_domain='
                                       f'{domain}')] + [
                                   '-S', f'{MULTINODE_CHECK}.nvlink_domain='
                                   f'{domain}']))
    if len(groups) >= 2:
        cross = tuple(members[0] for members in groups.values())
        found.append(Phase(phase.system, phase.partition, 'set', [cross],
                           tag=CROSS_TAG, options=only_multinode + [
                               '-S', f'{MULTINODE_CHECK}.fabric=ib']))
    if not found:  # no domain of two nodes, one domain: as it was
        return [phase]
    return [Phase(phase.system, phase.partition, 'set', [tuple(nodes)],
                  options=['-x', names_pattern([MULTINODE_CHECK])])] + found


def domains_so_far(results, phase: Phase, blocks=None) -> dict[str, str]:
    """The domains the node phase of this phase's partition recorded, else
    Slurm's blocks (``blocks()``, block_topology.py) on a multi-node NVLink
    partition (``blocks`` None elsewhere)."""
    found = {}
    for result in results:
        if (result.phase.partition == phase.partition
                and result.phase.scope == 'node'):
            found.update(node_domains(result.cases))
    if not found and blocks is not None and phase.scope == 'set':
        found = blocks()
    return found


def label_findings(phase: Phase, findings: list) -> None:
    """Name the domain (or 'across') in the findings of a split run."""
    split = phase.tag == CROSS_TAG or \
        phase.tag.startswith(DOMAIN_TAG_PREFIX)
    if not split:
        return  # not a split set run (a batch, confirm or re-pair tag)
    where = ('across NVLink domains' if phase.tag == CROSS_TAG
             else f'NVLink domain {phase.tag[len(DOMAIN_TAG_PREFIX):]}…')
    for finding in findings:
        finding.check = f'{finding.check} [{where}: {",".join(phase.pins[0])}]'
