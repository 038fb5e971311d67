"""Fill a test's ReFrame ``reference`` from the partition's VM SKU, through
the one lookup every check uses (:func:`references.find`).

Each check says how it measured (:meth:`BenchmarkTest.reference_method`:
its method fingerprint, see reference_key.FINGERPRINTS), on how many nodes
and over which fabric; every metric then gets its reference key, stored on
its row (``reference_key``), and the reference with the same key judges it.
A reference measured otherwise is shown without a verdict (the metric's
``reference_differences`` say how), and so is every reference of a run
with ``no_verdict_reasons``. The variables are BenchmarkTest's
(benchmark.py), which calls :func:`set_references` last before performance.
"""
from __future__ import annotations

import json
import os

from reframe.utility import ScopedDict

from . import references
from .reference_key import local_sku, reference_key


#: Written in the stage directory by every check: each perf variable's key
#: and what it found (scripts/reference_table.py reads it after a dry run).
KEYS_FILE = 'clusterproof_reference_keys.json'


def key_sku(test, sku: str | None = None) -> str:
    """The SKU part of the keys: the VM SKU (*sku*, else vm_sku()),
    else system:partition."""
    return references.short_sku(sku or test.vm_sku()) or local_sku(
        test.current_system.name, test.current_partition.name)


def sku_lookup(test, sku: str) -> dict[str, tuple]:
    """Perf variable -> (its reference key, the references.find match
    or None) for a node of VM size *sku*, measured as this run was."""
    method = test.reference_method()
    nodes, fabric = test.reference_nodes(), test.reference_fabric()
    sku_part = key_sku(test, sku)
    return {var: (reference_key(metric, sku_part, method, nodes, fabric),
                  references.find(test.reference_family, metric, sku,
                                  method, nodes, fabric))
            for var, metric in test.reference_metrics().items()}


def lookups_on(test, skus) -> dict[str, dict]:
    """VM size -> :func:`sku_lookup` on it, for each of *skus* (nodes
    of a batch job that are not the partition's SKU); {} each for a
    check without reference data."""
    return {sku: sku_lookup(test, sku) if test.reference_family else {}
            for sku in skus}


def reference_on_another_sku(test, lookup: dict, name: str, var: str,
                             batch):
    """The reference of *var*, measured on a node of another VM size:
    that size's reference of *name* (else the batch's), without
    thresholds, with its key and source."""
    if not lookup:
        return batch and (batch[0], None, None, batch[3])
    key, match = lookup.get(name, (None, None))
    if key:
        test.metric_reference_keys[var] = key
    if match is None:
        test.reference_sources.pop(var, None)
        return None
    test.reference_sources[var] = match.reference.source
    return (match.reference.value, None, None, match.reference.unit)


def reference_of(test, target: str, name: str):
    """The reference of perf variable *name* on *target*, None where
    there is none (also for a batch group's measurements without a
    value: measurements.py)."""
    # a ScopedDict once ReFrame has seen it: looked up scope:name
    try:
        return test.reference[f'{target}:{name}']
    except (KeyError, TypeError):
        return None


def reference_tables(test) -> dict[str, dict]:
    """{target: {var: reference}}, from a plain dict or a ScopedDict
    (whose keys are 'target:var')."""
    if not isinstance(test.reference, ScopedDict):
        return {target: dict(table)
                for target, table in test.reference.items()}
    tables = {}
    for key in test.reference.keys():
        target, _, var = key.rpartition(':')
        tables.setdefault(target, {})[var] = test.reference[key]
    return tables


def set_references(test) -> None:
    if not test.reference_family:
        return
    test.metric_peaks, test.peak_sources = test.sku_peaks(test.vm_sku())
    target = test.current_partition.fullname
    table = dict(test.reference.get(target, {}))
    sources = dict(test.reference_sources)
    found = {}
    for var, (key, match) in sku_lookup(test, test.vm_sku()).items():
        test.metric_reference_keys[var] = key
        found[var] = {'key': key,
                      'reference': match and match.label,
                      'same_method': bool(match and match.same_method)}
        if match is None or var in table:
            continue
        ref = match.reference
        judged = match.same_method
        table[var] = (ref.value, ref.lower if judged else None,
                      ref.upper if judged else None, ref.unit)
        sources.setdefault(var, ref.source)
        if not judged:
            test.reference_differences[var] = [
                *match.differences,
                *(f'{name} not stated by the source'
                  for name in match.unstated)]
    if test.no_verdict_reasons:
        table = {name: (ref[0], None, None, ref[3])
                 for name, ref in table.items()}
    if table:
        test.reference = {**test.reference, target: table}
    test.reference_sources = sources
    write_keys(test, found)


def write_keys(test, found: dict) -> None:
    if test.stagedir and os.path.isdir(test.stagedir):
        with open(os.path.join(test.stagedir, KEYS_FILE), 'w') as fp:
            json.dump({'test': test.display_name,
                       'family': test.reference_family,
                       'no_verdict_reasons': test.no_verdict_reasons,
                       'metrics': found}, fp, indent=1, sort_keys=True)


def peaks(test, sku: str) -> tuple[dict, dict]:
    """({metric: peak}, {metric: its source}) of a node of VM size
    *sku* in this run."""
    peaks = references.lookup_peaks(test.reference_family, sku)
    nodes = test.num_nodes
    factor, why = test.peak_factor()
    scaled = {name for name in peaks
              if name in test.peaks_scale_with_nodes and nodes > 1}
    values = {name: peak.value * factor * (nodes if name in scaled else 1)
              for name, peak in peaks.items()}
    sources = {
        name: peak.describe() + (f'; x {nodes} nodes'
                                 if name in scaled else '')
        + (f' x {factor:g} {why}' if factor != 1 else '')
        for name, peak in peaks.items()}
    return values, sources
