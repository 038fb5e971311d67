"""Per-SKU reference values, read from YAML data with their sources.

Data lives in ``checks/references/<family>.yaml``. A site overrides or adds
values without editing checks: every ``<family>.yaml`` found in the
directories listed in ``CLUSTERPROOF_REFERENCES`` (``:``-separated) is laid
over the shipped one, SKU by SKU and key by key.
"""
from __future__ import annotations

import fnmatch
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import reference_key

SHIPPED_DIR = Path(__file__).resolve().parent.parent / 'references'
OVERRIDE_ENV = 'CLUSTERPROOF_REFERENCES'


@dataclass(frozen=True)
class Peak:
    """A theoretical limit of a metric on a SKU (not a measured value)."""
    value: float
    unit: str
    source: str
    derivation: str

    def describe(self) -> str:
        return f'{self.derivation} ({self.source})' if self.derivation \
            else self.source


@dataclass(frozen=True)
class Reference:
    value: float
    lower: float | None
    upper: float | None
    unit: str
    source: str

    def as_reframe(self):
        return (self.value, self.lower, self.upper, self.unit)


def short_sku(vm_sku: str | None) -> str:
    """'Standard_<size>' -> '<size>' (the keys of the data files)."""
    if not vm_sku:
        return ''
    if vm_sku.lower().startswith('standard_'):
        return vm_sku[len('standard_'):]
    return vm_sku


def _search_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(OVERRIDE_ENV, '').split(':') if p]
    return [SHIPPED_DIR, *extra]


def _merge(base: dict, over: dict) -> dict:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@functools.lru_cache(maxsize=None)
def _load_family(family: str, search_dirs: tuple[Path, ...]) -> dict:
    data: dict = {}
    for directory in search_dirs:
        path = directory / f'{family}.yaml'
        if not path.is_file():
            continue
        with open(path) as fp:
            loaded = yaml.safe_load(fp) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f'{path}: expected a mapping of SKUs')
        data = _merge(data, loaded)
    return data


def load_family(family: str) -> dict:
    return _load_family(family, tuple(_search_dirs()))


def _entry_for_sku(data: dict, sku: str, key: str) -> dict:
    """The SKU's ``key`` entry: from the exact SKU key if it has one, else
    from the first fnmatch pattern that matches and has one (so a file can
    give one size its own CPU figures and a whole family its network ones)."""
    if key in data.get(sku, {}):
        return data[sku][key]
    for pattern, entry in data.items():
        if (pattern != 'sources' and isinstance(entry, dict) and key in entry
                and fnmatch.fnmatchcase(sku, pattern)):
            return entry[key]
    return {}


def is_metric(spec) -> bool:
    """An entry's metric specs are the mappings with a ``value``; its other
    fields (method, nodes, fabric, unstated, env, build...) say how."""
    return isinstance(spec, dict) and 'value' in spec


def _reference(spec: dict, sources: dict) -> Reference:
    source = spec.get('source', '')
    return Reference(value=float(spec['value']), lower=spec.get('lower'),
                     upper=spec.get('upper'), unit=spec['unit'],
                     source=sources.get(source, source))


def lookup(family: str, key: str, vm_sku: str | None) -> dict[str, Reference]:
    """The references of one entry (by its label, ``key``) on one SKU, by
    metric name (``clusterproof ingest --reference-key``; checks use
    :func:`find`)."""
    data = load_family(family)
    sources = data.get('sources', {})
    entry = _entry_for_sku(data, short_sku(vm_sku), key)
    return {metric: _reference(spec, sources)
            for metric, spec in entry.items() if is_metric(spec)}


def entries(family: str, vm_sku: str | None) -> dict[str, dict]:
    """Every entry (label -> entry) that applies to the SKU: its own, then
    those of the patterns that match it (a label of the SKU's own wins)."""
    data = load_family(family)
    sku = short_sku(vm_sku)
    found = dict(data.get(sku, {})) if isinstance(data.get(sku), dict) \
        else {}
    for pattern, block in data.items():
        if (pattern in ('sources', sku) or not isinstance(block, dict)
                or not fnmatch.fnmatchcase(sku, pattern)):
            continue
        for label, entry in block.items():
            found.setdefault(label, entry)
    return {label: entry for label, entry in found.items()
            if isinstance(entry, dict)}


@dataclass(frozen=True)
class Match:
    """The reference a run is shown against: ``differences`` says how the
    run's method departs from the reference's (empty: the same method);
    ``unstated`` names what the source does not say. Only a match with
    neither may judge."""
    label: str
    reference: Reference
    differences: tuple[str, ...]
    unstated: tuple[str, ...]

    @property
    def same_method(self) -> bool:
        return not self.differences and not self.unstated


def _same(a, b) -> bool:
    return reference_key.fingerprint({'v': a}) == \
        reference_key.fingerprint({'v': b})


def _differences(family: str, entry: dict, method: dict, nodes: int,
                 fabric: str | None) -> list[str] | None:
    """How a run departs from one entry; None when it measures something
    else (an identity field differs)."""
    unstated = set(entry.get('unstated') or ())
    wanted = {**(entry.get(METHOD_KEY) or {}),
              'nodes': entry.get('nodes', 1), 'fabric': entry.get('fabric')}
    ran = {**method, 'nodes': nodes, 'fabric': fabric}
    identity = set(reference_key.identity_fields(family)) | \
        set(reference_key.KEY_PARTS)
    found = []
    for name in (*reference_key.fingerprint_fields(family),
                 *reference_key.KEY_PARTS):
        if name in unstated or _same(wanted.get(name), ran.get(name)):
            continue
        if name in identity:
            return None
        found.append(f'{name} {ran.get(name)} (reference: '
                     f'{wanted.get(name)})')
    return found


def find(family: str, metric: str, vm_sku: str | None, method: dict,
         nodes: int = 1, fabric: str | None = None) -> Match | None:
    """THE lookup of every check: the reference of ``metric`` on the SKU
    whose key (method fingerprint, node count, fabric) is the run's; else
    the nearest one that measures the same thing, with the differences
    that keep it from judging; None when nothing applies."""
    sources = load_family(family).get('sources', {})
    best = None
    for label, entry in entries(family, vm_sku).items():
        spec = entry.get(metric)
        if not is_metric(spec):
            continue
        differences = _differences(family, entry, method, nodes, fabric)
        if differences is None:
            continue
        match = Match(label, _reference(spec, sources), tuple(differences),
                      tuple(entry.get('unstated') or ()))
        if best is None or (len(match.differences), len(match.unstated)) \
                < (len(best.differences), len(best.unstated)):
            best = match
    return best


#: Entry beside the metrics that says how the reference values were
#: measured (array size, threads, placement, build...): a run is judged
#: against them only when it was measured the same way.
METHOD_KEY = 'method'


def lookup_method(family: str, key: str, vm_sku: str | None) -> dict:
    """How the references of one check on one SKU were measured ({} when
    the data does not say), with its source spelled out."""
    data = load_family(family)
    entry = _entry_for_sku(data, short_sku(vm_sku), key)
    method = dict(entry.get(METHOD_KEY) or {})
    if 'source' in method:
        method['source'] = data.get('sources', {}).get(method['source'],
                                                       method['source'])
    return method


PEAKS_FAMILY = 'peaks'


def lookup_peaks(family: str, vm_sku: str | None) -> dict[str, Peak]:
    """Theoretical limits of one check family's metrics on one SKU, from
    ``peaks.yaml`` (overridable like the references)."""
    if not family:
        return {}
    data = load_family(PEAKS_FAMILY)
    sources = data.get('sources', {})
    entry = _entry_for_sku(data, short_sku(vm_sku), family)
    peaks = {}
    for metric, spec in entry.items():
        source = spec.get('source', '')
        peaks[metric] = Peak(value=float(spec['value']), unit=spec['unit'],
                             source=sources.get(source, source),
                             derivation=spec.get('derivation', ''))
    return peaks
