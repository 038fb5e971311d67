"""The one reference key: what a number must share with a reference to be
judged against it.

A key names the metric, the SKU (or, for machines without one, the
``system:partition`` that ran it), the run's method fingerprint (the things
that change the number: problem size, threads or ranks, the binary's build,
options such as ``-q`` or ``-D``), the node count and the fabric. It is
stored on every row (``reference_key``), so a published reference and a
site baseline built from the store are found the same way.

    >>> reference_key('triad_bw', 'SKU_v1',
    ...               {'threads': 176, 'array_size': 400000000})
    'triad_bw|SKU_v1|array_size=400000000,threads=176|1n|-'

(the SKU names themselves live in config/systems/sku_facts.yaml and the
reference data).
"""
from __future__ import annotations

from collections.abc import Mapping

SEPARATOR = '|'
NO_FABRIC = '-'


def _text(value) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def fingerprint(method: Mapping[str, object] | None) -> str:
    """``{'q': 2, 'D': 10}`` -> ``'D=10,q=2'``: sorted, unset fields left out."""
    if not method:
        return ''
    return ','.join(f'{name}={_text(value)}'
                    for name, value in sorted(method.items())
                    if value is not None and value != '')


def reference_key(metric: str, sku: str, method: Mapping[str, object] | None = None,
                  nodes: int = 1, fabric: str | None = None) -> str:
    for part in (metric, sku):
        if not part or SEPARATOR in part:
            raise ValueError(f'reference key part {part!r}: empty or holds {SEPARATOR!r}')
    return SEPARATOR.join([metric, sku, fingerprint(method), f'{int(nodes)}n',
                           fabric or NO_FABRIC])


def parse_reference_key(key: str) -> dict:
    """The inverse of :func:`reference_key` (method values stay strings)."""
    parts = key.split(SEPARATOR)
    if len(parts) != 5 or not parts[3].endswith('n'):
        raise ValueError(f'not a reference key: {key!r}')
    metric, sku, method, nodes, fabric = parts
    fields = dict(item.split('=', 1) for item in method.split(',') if item)
    return {'metric': metric, 'sku': sku, 'method': fields,
            'nodes': int(nodes[:-1]), 'fabric': None if fabric == NO_FABRIC else fabric}


def local_sku(system: str | None, partition: str | None) -> str:
    """What stands for the SKU where a partition declares none (the local
    machine): its own ``system:partition``, so its baseline never leaks into
    a real SKU's references."""
    return f'{system or "unknown"}:{partition or "default"}'


#: What changes each check family's number, i.e. the method fields its keys
#: carry: every reference entry of checks/references/<family>.yaml names
#: them all (or lists those its source does not state under ``unstated``),
#: and every run of the family's checks fills them. ``identity`` fields
#: name *what* is measured: a reference that differs in one of them is
#: another measurement and is not even shown; one that differs only in the
#: others is shown beside the run, without a verdict.
FINGERPRINTS = {
    'stream': {'fields': ('array_size', 'ntimes', 'threads', 'places',
                          'ranks'),
               'identity': ()},
    'perftest': {'fields': ('test', 'size', 'bidir', 'gdr', 'layout', 'qps',
                            'duration', 'all_hcas'),
                 'identity': ('test', 'bidir', 'gdr', 'layout')},
    # size: the largest message; min_size: the smallest (a sweep, or the
    # one size of a run such as the health checks'); topo_file: 'none'
    # (NCCL_TOPO_FILE set empty), 'image' (the image's file, chosen on the
    # node) or its path; algo: NCCL_ALGO where forced, else 'default'
    'nccl': {'fields': ('collective', 'size', 'min_size', 'topo_file',
                        'algo'), 'identity': ('collective',)},
    'osu': {'fields': ('test', 'size', 'ranks_per_node', 'buffer'),
            'identity': ('test', 'buffer')},
    'hpl': {'fields': ('ranks_per_node', 'threads_per_rank', 'nb'),
            'identity': ()},
    'hpcg': {'fields': ('nx', 'ny', 'nz', 'runtime', 'ranks_per_node',
                        'threads_per_rank'), 'identity': ()},
    'hpcc': {'fields': ('problem_size', 'ranks_per_node'), 'identity': ()},
    # the file system ('lustre:/lustre'): another one is another measurement
    'ior': {'fields': ('api', 'block_size', 'transfer_size', 'segments',
                       'file_per_process', 'direct_io', 'tasks_per_node',
                       'file_system'),
            'identity': ('api', 'file_system')},
    'mpi_stage': {'fields': ('file_size_mib',), 'identity': ()},
    # per-GPU checks (checks/gpu/): the copy engine or SM copies, another
    # BabelStream build, another GEMM tool
    'nvbandwidth': {'fields': ('engine', 'samples', 'locked_clock_mhz'),
                    'identity': ()},
    'babelstream': {'fields': ('source', 'array_size', 'ntimes',
                               'precision'), 'identity': ()},
    'gpu_compute': {'fields': ('tool', 'seconds', 'precision'),
                    'identity': ('tool',)},
}

#: The key parts beside the method that a reference entry may leave
#: unstated (a figure published "multi-node" without a node count).
KEY_PARTS = ('nodes', 'fabric')


def fingerprint_fields(family: str) -> tuple[str, ...]:
    return FINGERPRINTS.get(family, {}).get('fields', ())


def identity_fields(family: str) -> tuple[str, ...]:
    return FINGERPRINTS.get(family, {}).get('identity', ())
