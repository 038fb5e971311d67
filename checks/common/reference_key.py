"""The one reference key: what a number must share with a reference to be
judged against it.

A key names the metric, the SKU (or, for machines without one, the
``system:partition`` that ran it), the run's method fingerprint (the things
that change the number: problem size, threads or ranks, the binary's build,
options such as ``-q`` or ``-D``), the node count and the fabric. It is
stored on every row (``reference_key``), so a published reference and a
site baseline built from the store are found the same way.

    >>> reference_key('triad_bw', 'HB176rs_v4',
    ...               {'threads': 176, 'array_size': 400000000})
    'triad_bw|HB176rs_v4|array_size=400000000,threads=176|1n|-'
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
