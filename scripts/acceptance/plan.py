"""Which checks run where, as ReFrame command lines.

A check runs at one of four scopes:
- node: on every node (single-node checks): one job per batch of
  NODE_BATCH nodes that runs the check on each of them at once, for the
  checks that can (FANOUT_CHECKS, checks/common/fan_out_results.py), one
  job per node for the others;
- pair: on node pairs around a ring, so that every node meets two different
  partners (a node failing with both is the bad one): one job per batch of
  NODE_BATCH ring pairs, pinned as a path around the ring (each node with
  the next one), that runs each pair at once where they share no node
  (rounds of node-disjoint pairs, checks/common/fan_out.py), for the checks
  that can (PAIR_FANOUT_CHECKS); one job per pair for the others;
- set: once over every usable node of the partition (collectives);
- whole: once per partition, where the check puts itself (storage, staging).
A failure at the last two scopes is a finding about the partition, not a
node.
Pinning uses the checks' ``pinned_nodes`` variable through ReFrame's
``-P`` (one test case per node batch, node or pair). A partition of thousands of nodes
is run in batched sessions of at most MAX_PINS pins each, so that no
command line grows with the partition (one ``-P`` argument above 128 KiB is
``Argument list too long``); the set scope's one pin is written as Slurm
host ranges (``hb-[0001-0999]``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

NODE_CHECKS = ('StreamCheck', 'StreamSpackCheck', 'HplCheck', 'HplSpackCheck',
               'HpcgCheck', 'HpcgSpackCheck', 'HpccNode', 'NcclSingleNode',
               'NcclHealthCheckAllReduce', 'PerftestLoopback', 'NvlinkFabric',
               'GpuCopyBandwidth', 'GpuMemoryBandwidth', 'GpuComputeQuick',
               'GpuComputeBurn', 'GpuInventory', 'GpuNvlink', 'GpuDiag',
               'GpuDiagDaily')
PAIR_CHECKS = ('OsuPointToPoint', 'OsuPointToPointSpack', 'PerftestPair',
               'HpccTwoNodes')
SET_CHECKS = ('OsuCollective', 'NcclMultiNode')
#: Set checks that measure inside one NVLink domain only: they run in the
#: per-domain set phases scripts/acceptance/nvlink.py makes, never over a
#: whole partition.
DOMAIN_CHECKS = ('GpuFabricBandwidth',)
#: Node checks that run once per node of a batch job (fans_out = True).
#: (PerftestLoopback runs its script once per node, from the batch shell.)
#: NvlinkFabric and the GPU node checks (checks/gpu/gpu_node.py) stay one
#: node per job: they read nvidia-smi in their own hooks.
FANOUT_CHECKS = ('StreamCheck', 'StreamSpackCheck', 'HplCheck',
                 'HplSpackCheck', 'HpcgCheck', 'HpcgSpackCheck', 'HpccNode',
                 'NcclSingleNode', 'NcclHealthCheckAllReduce',
                 'PerftestLoopback')
SINGLE_NODE_CHECKS = tuple(c for c in NODE_CHECKS if c not in FANOUT_CHECKS)
#: Checks whose valid_systems is ['+gpu'] (checks/gpu/nccl.py NcclBase,
#: checks/gpu/nvlink_fabric.py): ReFrame makes no test case of them on a
#: partition without the 'gpu' feature.
GPU_CHECKS = ('NcclSingleNode', 'NcclHealthCheckAllReduce', 'NcclMultiNode',
              'NvlinkFabric', 'GpuCopyBandwidth', 'GpuMemoryBandwidth',
              'GpuComputeQuick', 'GpuComputeBurn', 'GpuInventory', 'GpuNvlink',
              'GpuDiag', 'GpuDiagDaily')
#: Skips itself on every node of a partition whose extras do not say
#: multi-node NVLink (checks/gpu/nvlink_fabric.py only_on_nvlink_racks).
NVLINK_CHECK = 'NvlinkFabric'
#: Pair checks that run once per pair of a batch job (fan_group_size 2).
#: (PerftestPair runs its script once per pair, from the batch shell.)
PAIR_FANOUT_CHECKS = ('OsuPointToPoint', 'OsuPointToPointSpack',
                      'HpccTwoNodes', 'PerftestPair')
SINGLE_PAIR_CHECKS = tuple(c for c in PAIR_CHECKS
                           if c not in PAIR_FANOUT_CHECKS)
#: Nodes per batch job of a fan-out check (--node-batch): 32 makes a
#: 1,000-node partition 32 test cases per check instead of 1,000, and a
#: batch still waits for only 32 free nodes together (one busy node holds
#: back 31 others, never the whole partition).
NODE_BATCH = 32
SCOPES = ('node', 'pair', 'set', 'whole')

PIN_VARIABLE = 'pinned_nodes'
# Between -P values; a pair's nodes are separated by ',' inside one value.
VALUE_DELIMITER = ';'
# Pins per ReFrame session: 500 pairs of 30-character names are 30 KB;
# node names per session (a batch pin holds many): as many.
MAX_PINS = 500
MAX_NAMES = 2 * MAX_PINS
_NUMBERED = re.compile(r'^(.*?)(\d+)$')


def host_ranges(nodes: list[str]) -> list[str]:
    """Slurm host range entries for *nodes*, one per run of consecutive
    numbers of one prefix and width (``hb-[0001-0040]``), in order; no
    entry holds a comma, so each is one value of a pin."""
    entries = []   # [prefix, width, first, last] or a plain name
    for node in nodes:
        numbered = _NUMBERED.match(node)
        if numbered:
            prefix, digits = numbered.groups()
            number = int(digits)
            last = entries[-1] if entries else None
            if isinstance(last, list) and last[:2] == [prefix, len(digits)] \
                    and last[3] + 1 == number:
                last[3] = number
                continue
            entries.append([prefix, len(digits), number, number])
        else:
            entries.append(node)
    return [entry if isinstance(entry, str) else _range_text(*entry)
            for entry in entries]


def _range_text(prefix: str, width: int, first: int, last: int) -> str:
    if first == last:
        return f'{prefix}{first:0{width}d}'
    return f'{prefix}[{first:0{width}d}-{last:0{width}d}]'


def batches(pins: list, size: int = MAX_PINS) -> list[list]:
    return [pins[i:i + size] for i in range(0, len(pins), size)]


def sessions(pins: list[tuple], max_pins: int = MAX_PINS,
             max_names: int = MAX_NAMES) -> list[list[tuple]]:
    """Pins in order, cut into ReFrame sessions of at most *max_pins* pins
    and *max_names* node names (a pin larger than that is one session)."""
    found, names = [[]], 0
    for pin in pins:
        if found[-1] and (len(found[-1]) == max_pins
                          or names + len(pin) > max_names):
            found.append([])
            names = 0
        found[-1].append(pin)
        names += len(pin)
    return found if found[0] else []


def ring_pairs(nodes: list[str]) -> list[tuple[str, str]]:
    """Each node with the next one around the ring: with three nodes or
    more every node has two different partners."""
    if len(nodes) < 2:
        return []
    if len(nodes) == 2:
        return [(nodes[0], nodes[1])]
    return [(nodes[i], nodes[(i + 1) % len(nodes)])
            for i in range(len(nodes))]


def ring_paths(nodes: list[str], size: int) -> list[tuple[str, ...]]:
    """The ring's pairs, *size* at a time, each batch as the path of its
    pairs (a, b, c = a-b and b-c); the last one closes the ring (ends on
    the first node)."""
    pairs = ring_pairs(nodes)
    return [tuple([chunk[0][0]] + [b for _, b in chunk])
            for chunk in batches(pairs, size)]


def names_pattern(names) -> str:
    """A ReFrame -n/-x pattern matching these test classes and their
    parameterised variants (display names without spaces)."""
    return '^(' + '|'.join(sorted(names)) + ')(%|$)'


def scope_of(check_name: str) -> str:
    if check_name in NODE_CHECKS:
        return 'node'
    if check_name in PAIR_CHECKS:
        return 'pair'
    if check_name in SET_CHECKS or check_name in DOMAIN_CHECKS:
        return 'set'
    return 'whole'


@dataclass
class Selection:
    """What the user asked for (ReFrame's own options)."""
    checks: list[str]
    tags: list[str] = field(default_factory=list)
    excludes: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # passed to ReFrame as is
    #: A job still pending after this long is given up (not measured): a
    #: job that can never start must not hold a nightly run forever.
    max_pending: str | None = None

    def options(self) -> list[str]:
        options = []
        if self.max_pending:
            options += ['-S', f'max_pending_time={self.max_pending}']
        for path in self.checks:
            options += ['-c', path]
        for tag in self.tags:
            options += ['-t', tag]
        for name in self.excludes:
            options += ['-x', name]
        return options + list(self.extra)


@dataclass
class Phase:
    """One ReFrame session: one partition, one scope, its node pins (one
    batch of them: *batch* of *batches*)."""
    system: str
    partition: str
    scope: str
    pins: list[tuple[str, ...]] = field(default_factory=list)
    #: Tells apart several sessions of one scope (NVLink domains, a
    #: confirmation or re-pair run).
    tag: str = ''
    #: More ReFrame options for this session only.
    options: list[str] = field(default_factory=list)
    #: Only these test classes of the scope (a confirmation or re-pair run).
    names: tuple[str, ...] = ()
    #: A second run of tests already run (same test hashes): it gets its own
    #: ReFrame prefix, so the first run's stage and output stay.
    rerun: bool = False
    #: One batch of a scope's pins: *batch* of *batches* (MAX_PINS each).
    batch: int = 1
    batches: int = 1

    @property
    def label(self) -> str:
        label = '-'.join(filter(None, (self.partition, self.scope, self.tag)))
        return label if self.batches == 1 else \
            f'{label}-{self.batch}of{self.batches}'

    def scope_options(self) -> list[str]:
        if self.scope == 'whole':
            return ['-x', names_pattern(NODE_CHECKS + PAIR_CHECKS
                                        + SET_CHECKS + DOMAIN_CHECKS)]
        names = self.names or {'node': NODE_CHECKS, 'pair': PAIR_CHECKS,
                               'set': SET_CHECKS}[self.scope]
        # A set's one pin of every node travels as Slurm host ranges (its
        # findings are the partition's: no verdict reads its node names).
        values = VALUE_DELIMITER.join(
            ','.join(host_ranges(list(pin)) if self.scope == 'set' else pin)
            for pin in self.pins)
        options = ['-n', names_pattern(names),
                   '-P', f'{PIN_VARIABLE}={values}',
                   '--param-values-delim', VALUE_DELIMITER]
        if self.scope == 'set':
            for name in SET_CHECKS:
                options += ['-S', f'{name}.num_nodes={len(self.pins[0])}']
        return options + list(self.options)


def left_out(partition: dict) -> tuple[str, ...]:
    """The node checks that cannot run on a partition (its configuration),
    as the checks themselves decide: GPU_CHECKS without the 'gpu' feature
    their '+gpu' asks for (no test case: a session of them alone held none,
    ~2 s each on HBv4), NVLINK_CHECK without multi-node NVLink (a skip on
    every node, which would make every node not measured)."""
    gpus = 'gpu' in partition.get('features', ())
    mnnvl = partition.get('extras', {}).get('nccl_multinode_fabric') == \
        'mnnvl'
    return tuple(c for c in NODE_CHECKS
                 if (c in GPU_CHECKS and not gpus)
                 or (c == NVLINK_CHECK and not mnnvl))


def phases(system: str, partition: str, nodes: list[str] | None,
           node_batch: int = NODE_BATCH,
           leaving_out: tuple[str, ...] = ()) -> list[Phase]:
    """The sessions of one partition; nodes None = the scheduler cannot
    list them (not Slurm): everything runs once, unpinned. *node_batch*:
    nodes (or ring pairs) per job of the fan-out checks (1 = one job per
    node or pair for all). *leaving_out* (left_out): node checks not
    planned, and no session when none of its checks is left."""
    if nodes is None:
        return [Phase(system, partition, 'unpinned')]

    def kept(names):
        return tuple(c for c in names if c not in leaving_out)
    singles = [(node,) for node in nodes]
    if node_batch > 1:
        found = _batched(system, partition, 'node', batches(nodes, node_batch),
                         names=kept(FANOUT_CHECKS))
        if kept(SINGLE_NODE_CHECKS):
            found += _batched(system, partition, 'node', singles, tag='one',
                              names=kept(SINGLE_NODE_CHECKS))
    else:
        found = _batched(system, partition, 'node', singles,
                         names=kept(NODE_CHECKS) if leaving_out else ())
    pairs = ring_pairs(nodes)
    if pairs and node_batch > 1:
        found += _batched(system, partition, 'pair',
                          ring_paths(nodes, node_batch),
                          names=PAIR_FANOUT_CHECKS)
        if SINGLE_PAIR_CHECKS:   # (every pair check batches now)
            found += _batched(system, partition, 'pair', pairs, tag='one',
                              names=SINGLE_PAIR_CHECKS)
    elif pairs:
        found += _batched(system, partition, 'pair', pairs)
    if pairs:
        found.append(Phase(system, partition, 'set', [tuple(nodes)]))
    return found + [Phase(system, partition, 'whole')]


def _batched(system, partition, scope, pins, **more) -> list[Phase]:
    chunks = sessions([tuple(pin) for pin in pins])
    return [Phase(system, partition, scope, chunk, batch=index,
                  batches=len(chunks), **more)
            for index, chunk in enumerate(chunks, 1)]


def reframe_options(phase: Phase, selection: Selection, report: str,
                    prefix: str, retries: int) -> list[str]:
    """ReFrame's options for one phase (after `reframe -C config`)."""
    scope = [] if phase.scope == 'unpinned' else phase.scope_options()
    options = ['--system', f'{phase.system}:{phase.partition}',
               *selection.options(), *scope,
               '--report-file', report, '--prefix', prefix, '--nocolor']
    if retries:
        options += ['--max-retries', str(retries)]
    return options + ['-r']
