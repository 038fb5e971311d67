"""The SKU hardware facts of sku_facts.yaml, as partition extras.

``extras(vm_sku)`` gives what a partition of that SKU declares (vm_sku,
cores_per_node, numa_nodes, memory_gib, l3_bytes, gpus_per_node, ib_hcas
as HCA names, hpl_layout..., and fact_sources: where each comes from),
``by_partition()`` the SKU of each ReFrame
partition name, and ``source(vm_sku, fact)`` where a value comes from.
A constrained-core size (``full_size``) has its full size's facts except
those it states itself (its cores); one without ``partition`` has no
partition of its own.
"""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

FACTS_FILE = Path(__file__).with_name('sku_facts.yaml')


@functools.lru_cache(maxsize=None)
def load() -> dict:
    with open(FACTS_FILE) as fp:
        return yaml.safe_load(fp)


def skus() -> list[str]:
    return [name for name in load() if name != 'sources']


def by_partition() -> dict[str, str]:
    """ReFrame partition name -> VM SKU, in file order."""
    return {load()[sku]['partition']['value']: sku for sku in skus()
            if 'partition' in load()[sku]}


def _entry(vm_sku: str, fact: str) -> dict | None:
    facts = load().get(vm_sku, {})
    if fact in facts:
        return facts[fact]
    full_size = (facts.get('full_size') or {}).get('value')
    return _entry(full_size, fact) if full_size else None


def value(vm_sku: str, fact: str, default=None):
    entry = _entry(vm_sku, fact)
    return entry['value'] if entry else default


def source(vm_sku: str, fact: str) -> str | None:
    entry = _entry(vm_sku, fact) or {}
    return load()['sources'].get(entry.get('source'))


def fp64_rpeak_gflops(vm_sku: str) -> float | None:
    """cores x base clock x FP64 FLOPs per cycle; None where one is not
    published (peaks.yaml's Rpeak of the size must be this)."""
    factors = [value(vm_sku, fact) for fact in
               ('cores_per_node', 'base_clock_ghz', 'fp64_flops_per_cycle')]
    if None in factors:
        return None
    cores, clock, flops = factors
    return round(cores * clock * flops, 1)


def hca_names(count: int) -> list[str]:
    return [f'mlx5_ib{i}' for i in range(count)]


def extras(vm_sku: str) -> dict:
    """The partition extras of a SKU (no partition name; HCAs by name)."""
    found = {'vm_sku': vm_sku, 'fact_sources': {}}
    for fact, entry in load()[vm_sku].items():
        if fact == 'partition':
            continue
        found[fact] = entry['value']
        found['fact_sources'][fact] = source(vm_sku, fact)
    if 'ib_hcas' in found:
        found['ib_hcas'] = hca_names(found['ib_hcas'])
    return found
