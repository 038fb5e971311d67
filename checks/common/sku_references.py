"""Fill a test's ReFrame ``reference`` from the partition's VM SKU, through
the one lookup every check uses (:func:`references.find`).

Each check says how it measured (:meth:`SkuReferences.reference_method`:
its method fingerprint, see reference_key.FINGERPRINTS), on how many nodes
and over which fabric; every metric then gets its reference key, stored on
its row (``reference_key``), and the reference with the same key judges it.
A reference measured otherwise is shown without a verdict (the metric's
``reference_differences`` say how), and so is every reference of a run
with ``no_verdict_reasons``.
"""
from __future__ import annotations

import json
import os

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.utility import ScopedDict

from . import references
from .reference_key import local_sku, reference_key


#: Written in the stage directory by every check: each perf variable's key
#: and what it found (scripts/reference_table.py reads it after a dry run).
KEYS_FILE = 'clusterproof_reference_keys.json'


class SkuReferences(rfm.RegressionTestPlugin):
    #: Data file checks/references/<family>.yaml
    reference_family = variable(str, value='')

    #: Why this run must not be judged (another method than the reference's,
    #: a smoke size...): any reason keeps the references without thresholds,
    #: so the rows say 'informational'. Set before the performance stage.
    no_verdict_reasons = variable(typ.List[str], value=[])

    #: Metrics that add up the work of all the test's nodes (HPL Gflops):
    #: their per-node peak is multiplied by the test's num_nodes.
    peaks_scale_with_nodes = variable(typ.List[str], value=[])

    #: Filled from the reference data: metric -> where its value comes from.
    reference_sources = variable(typ.Dict[str, str], value={})

    #: Metric -> theoretical limit on this SKU in the metric's unit, and its
    #: source (filled from the reference data's peaks).
    metric_peaks = variable(typ.Dict[str, float], value={})
    peak_sources = variable(typ.Dict[str, str], value={})

    #: Perf variable -> its reference key (filled by the check; stored on
    #: the row as ``reference_key``).
    metric_reference_keys = variable(typ.Dict[str, str], value={})

    #: Perf variable -> why the reference shown beside it does not judge
    #: it (how the methods differ, what the source leaves unstated).
    reference_differences = variable(typ.Dict[str, typ.List[str]],
                                     value={})

    def judge_without_verdict(self, reason: str) -> None:
        """Keep every reference of the run without thresholds, saying why
        (vm_size.py calls this for a node of another SKU)."""
        self.no_verdict_reasons = list(self.no_verdict_reasons) + [reason]

    def vm_sku(self) -> str:
        """The VM SKU of the run's nodes: the one its partition declares
        (benchmark.py answers with the one the node reported)."""
        return self.current_partition.extras.get('vm_sku', '')

    def key_sku(self, sku: str | None = None) -> str:
        """The SKU part of the keys: the VM SKU (*sku*, else vm_sku()),
        else system:partition."""
        return references.short_sku(sku or self.vm_sku()) or local_sku(
            self.current_system.name, self.current_partition.name)

    # -- what a check says about its run (override) -------------------------
    def reference_method(self) -> dict:
        """The run's method fingerprint (reference_key.FINGERPRINTS)."""
        return {}

    def reference_nodes(self) -> int:
        return int(self.num_nodes or 1)

    def reference_fabric(self) -> str | None:
        return None

    def peak_factor(self) -> tuple[float, str]:
        """What a peak is multiplied by for this run, and why (2 for a
        bidirectional perftest, whose figure sums both directions)."""
        return 1, ''

    def reference_metrics(self) -> dict[str, str]:
        """Perf variable -> the metric it is a value of (benchmark.py
        answers from the check's perf metrics and devices)."""
        return {}

    # -- the lookup ---------------------------------------------------------
    def sku_lookup(self, sku: str) -> dict[str, tuple]:
        """Perf variable -> (its reference key, the references.find match
        or None) for a node of VM size *sku*, measured as this run was."""
        method = self.reference_method()
        nodes, fabric = self.reference_nodes(), self.reference_fabric()
        key_sku = self.key_sku(sku)
        return {var: (reference_key(metric, key_sku, method, nodes, fabric),
                      references.find(self.reference_family, metric, sku,
                                      method, nodes, fabric))
                for var, metric in self.reference_metrics().items()}

    def lookups_on(self, skus) -> dict[str, dict]:
        """VM size -> :meth:`sku_lookup` on it, for each of *skus* (nodes
        of a batch job that are not the partition's SKU); {} each for a
        check without reference data."""
        return {sku: self.sku_lookup(sku) if self.reference_family else {}
                for sku in skus}

    def reference_on_another_sku(self, lookup: dict, name: str, var: str,
                                 batch):
        """The reference of *var*, measured on a node of another VM size:
        that size's reference of *name* (else the batch's), without
        thresholds, with its key and source."""
        if not lookup:
            return batch and (batch[0], None, None, batch[3])
        key, match = lookup.get(name, (None, None))
        if key:
            self.metric_reference_keys[var] = key
        if match is None:
            self.reference_sources.pop(var, None)
            return None
        self.reference_sources[var] = match.reference.source
        return (match.reference.value, None, None, match.reference.unit)

    def reference_of(self, target: str, name: str):
        """The reference of perf variable *name* on *target*, None where
        there is none (also for a batch group's measurements without a
        value: measurements.py)."""
        # a ScopedDict once ReFrame has seen it: looked up scope:name
        try:
            return self.reference[f'{target}:{name}']
        except (KeyError, TypeError):
            return None

    def reference_tables(self) -> dict[str, dict]:
        """{target: {var: reference}}, from a plain dict or a ScopedDict
        (whose keys are 'target:var')."""
        if not isinstance(self.reference, ScopedDict):
            return {target: dict(table)
                    for target, table in self.reference.items()}
        tables = {}
        for key in self.reference.keys():
            target, _, var = key.rpartition(':')
            tables.setdefault(target, {})[var] = self.reference[key]
        return tables

    def set_sku_references(self) -> None:
        if not self.reference_family:
            return
        self.metric_peaks, self.peak_sources = self.sku_peaks(self.vm_sku())
        target = self.current_partition.fullname
        table = dict(self.reference.get(target, {}))
        sources = dict(self.reference_sources)
        found = {}
        for var, (key, match) in self.sku_lookup(self.vm_sku()).items():
            self.metric_reference_keys[var] = key
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
                self.reference_differences[var] = [
                    *match.differences,
                    *(f'{name} not stated by the source'
                      for name in match.unstated)]
        if self.no_verdict_reasons:
            table = {name: (ref[0], None, None, ref[3])
                     for name, ref in table.items()}
        if table:
            self.reference = {**self.reference, target: table}
        self.reference_sources = sources
        self._write_keys(found)

    def _write_keys(self, found: dict) -> None:
        if self.stagedir and os.path.isdir(self.stagedir):
            with open(os.path.join(self.stagedir, KEYS_FILE), 'w') as fp:
                json.dump({'test': self.display_name,
                           'family': self.reference_family,
                           'no_verdict_reasons': self.no_verdict_reasons,
                           'metrics': found}, fp, indent=1, sort_keys=True)

    def sku_peaks(self, sku: str) -> tuple[dict, dict]:
        """({metric: peak}, {metric: its source}) of a node of VM size
        *sku* in this run."""
        peaks = references.lookup_peaks(self.reference_family, sku)
        nodes = self.num_nodes
        factor, why = self.peak_factor()
        scaled = {name for name in peaks
                  if name in self.peaks_scale_with_nodes and nodes > 1}
        values = {name: peak.value * factor * (nodes if name in scaled else 1)
                  for name, peak in peaks.items()}
        sources = {
            name: peak.describe() + (f'; x {nodes} nodes'
                                     if name in scaled else '')
            + (f' x {factor:g} {why}' if factor != 1 else '')
            for name, peak in peaks.items()}
        return values, sources
