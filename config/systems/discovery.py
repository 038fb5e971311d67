"""What a CycleCloud Workspace for Slurm cluster's partitions are, from
``sinfo``: the SKU family each one's shape proposes.

CCWS does not write the VM size into ``slurm.conf`` for static partitions
(``hpc``, ``htc``, ``gpu``: only ``Feature=cloud``, CPUs, memory and gres;
Azure/cyclecloud-slurm README, "Dynamic Partitions"), so the shape is what
the login node can see. On dynamic partitions CCWS adds the VM size as a node
feature ("The VM Size is added implicitly"), which settles the family.
Where shapes agree (ND H100 v5 and ND H200 v5 both show 96 CPUs and
``gpu:8``) every candidate is kept and said; the first job's observed VM size
settles it (checks/common/vm_size.py).

Nothing here starts a node: ``sinfo`` only reads slurmctld's tables.
"""
from __future__ import annotations

import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field

from .azure_skus import SKUS

# One line per node and partition; '|' never occurs in these fields.
SINFO_FORMAT = '%R|%N|%c|%m|%G|%f|%T'
SINFO_ARGV = ['sinfo', '-h', '-a', '-N', '-o', SINFO_FORMAT]
TIMEOUT_S = 20

# CCWS holds back slurm.dampen_memory percent (default 5) of the VM's
# memory from RealMemory; an admin may hold back more. A family whose
# memory is known matches from this share of it up to all of it.
MIN_MEMORY_SHARE = 0.75

_GPU_GRES = re.compile(r'^gpu(?::[^:(]+)*:(\d+)')


class DiscoveryError(RuntimeError):
    """sinfo is missing, failed or said nothing usable."""


@dataclass(frozen=True)
class Shape:
    cpus: int
    memory_mb: int
    gpus: int
    features: tuple[str, ...]


@dataclass
class SlurmPartition:
    name: str
    nodes: list[str] = field(default_factory=list)
    shapes: Counter = field(default_factory=Counter)
    states: Counter = field(default_factory=Counter)

    def shape(self) -> Shape:
        """The most common node shape (a dynamic partition may mix)."""
        return self.shapes.most_common(1)[0][0]


@dataclass
class Proposal:
    partition: SlurmPartition
    candidates: list[str]
    basis: str

    @property
    def family(self) -> str | None:
        return self.candidates[0] if self.candidates else None


def gpu_count(gres: str) -> int:
    """`gpu:8`, `gpu:a100:8`, `gpu:8(S:0-1)`, `(null)` -> GPUs per node."""
    total = 0
    for item in gres.split(','):
        match = _GPU_GRES.match(item.strip())
        if match:
            total += int(match.group(1))
    return total


def _int(text: str) -> int:
    digits = re.match(r'\d+', text.strip())
    return int(digits.group()) if digits else 0


def parse_sinfo(text: str) -> list[SlurmPartition]:
    """Lines of ``sinfo -h -a -N -o SINFO_FORMAT`` -> partitions in the
    order sinfo lists them."""
    found: dict[str, SlurmPartition] = {}
    for line in text.splitlines():
        fields = line.strip().split('|')
        if len(fields) != 7 or not fields[0]:
            continue
        name, node, cpus, memory, gres, features, state = fields
        if node in ('', 'n/a'):  # a partition without node records
            continue
        part = found.setdefault(name, SlurmPartition(name))
        if node not in part.nodes:
            part.nodes.append(node)
        feature_list = tuple(f for f in features.split(',')
                             if f and f != '(null)')
        part.shapes[Shape(_int(cpus), _int(memory), gpu_count(gres),
                          feature_list)] += 1
        part.states[state.strip().lower()] += 1
    return list(found.values())


def _memory_fits(extras: dict, memory_mb: int) -> bool:
    declared = extras.get('memory_gib')
    if not declared or not memory_mb:
        return True
    full = declared * 1024
    return MIN_MEMORY_SHARE * full <= memory_mb <= full


def propose(part: SlurmPartition) -> Proposal:
    """The SKU families this partition's nodes can be, best first."""
    shape = part.shape()
    by_feature = {sku['extras']['vm_sku'].lower(): name
                  for name, sku in SKUS.items()}
    for feature in shape.features:
        if feature.lower() in by_feature:
            return Proposal(part, [by_feature[feature.lower()]],
                            f'node feature {feature} (the VM size)')
    candidates = [
        name for name, sku in SKUS.items()
        if sku['extras'].get('cores_per_node') == shape.cpus
        and sku['extras'].get('gpus_per_node', 0) == shape.gpus
        and _memory_fits(sku['extras'], shape.memory_mb)]
    gpus = f'gpu:{shape.gpus}' if shape.gpus else 'no GPU'
    basis = (f'{shape.cpus} CPUs, {shape.memory_mb // 1024} GiB, {gpus}')
    if len(part.shapes) > 1:
        basis += f' (the most common of {len(part.shapes)} node shapes)'
    return Proposal(part, candidates, basis)


def observed_by_node(rows) -> dict[str, str]:
    """{node: the VM size its last job reported} from stored rows
    (vm_sku_observed beside check_job_nodelist; single-node rows only,
    where the size is that node's)."""
    found = {}
    for row in rows:
        nodes = row.get('check_job_nodelist') or []
        if row.get('vm_sku_observed') and len(nodes) == 1:
            found[nodes[0]] = row['vm_sku_observed']
    return found


def settle(proposal: Proposal, observed: dict[str, str]) -> Proposal:
    """What the nodes reported decides between look-alike families."""
    sizes = {observed[n] for n in proposal.partition.nodes if n in observed}
    by_sku = {sku['extras']['vm_sku'].lower(): name
              for name, sku in SKUS.items()}
    families = {by_sku.get(size.lower()) for size in sizes}
    if len(families) != 1 or None in families:
        return proposal
    family = families.pop()
    if proposal.candidates == [family]:
        return proposal
    how = ('settled' if family in proposal.candidates
           else 'not its shape\'s family, but')
    return Proposal(proposal.partition, [family],
                    f'{proposal.basis}; {how} by the VM size its nodes '
                    f'reported ({", ".join(sorted(sizes))}, vm_sku_observed)')


def run_sinfo(timeout: float = TIMEOUT_S, env: dict | None = None) -> str:
    try:
        result = subprocess.run(SINFO_ARGV, capture_output=True, text=True,
                                timeout=timeout, env=env,
                                stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise DiscoveryError('sinfo not found: discovery needs a Slurm login '
                             'node') from None
    except subprocess.TimeoutExpired:
        raise DiscoveryError(f'sinfo did not answer within {timeout:g} s') \
            from None
    if result.returncode != 0:
        raise DiscoveryError('sinfo failed: '
                             + (result.stderr or result.stdout).strip())
    return result.stdout


def discover(timeout: float = TIMEOUT_S, env: dict | None = None
             ) -> list[Proposal]:
    partitions = parse_sinfo(run_sinfo(timeout, env))
    if not partitions:
        raise DiscoveryError('sinfo lists no partition')
    return [propose(part) for part in partitions]
