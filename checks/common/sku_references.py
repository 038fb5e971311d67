"""Fill a test's ReFrame ``reference`` from the partition's VM SKU."""
from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ

from . import references


class SkuReferences(rfm.RegressionTestPlugin):
    #: Data file checks/references/<family>.yaml
    reference_family = variable(str, value='')

    #: Entry under each SKU in that file
    reference_key = variable(str, value='')

    #: Why this run must not be judged (another method than the reference's,
    #: a smoke size...): any reason keeps the references without thresholds,
    #: so the rows say 'informational'. Set before the performance stage.
    no_verdict_reasons = variable(typ.List[str], value=[])

    #: Metrics that add up the work of all the test's nodes (HPL Gflops):
    #: their per-node peak is multiplied by the test's num_nodes.
    peaks_scale_with_nodes = variable(typ.List[str], value=[])

    def vm_sku(self) -> str:
        """The SKU the node reported after the run (vm_size.py), else the
        one its partition declares."""
        return (getattr(self, 'vm_sku_observed', '')
                or self.current_partition.extras.get('vm_sku', ''))

    @run_before('performance')
    def _set_sku_references(self):
        if not self.reference_family:
            return
        peaks = references.lookup_peaks(self.reference_family, self.vm_sku())
        nodes = getattr(self, 'num_nodes', 1)
        scaled = {name for name in peaks
                  if name in self.peaks_scale_with_nodes and nodes > 1}
        self.metric_peaks = {
            name: peak.value * (nodes if name in scaled else 1)
            for name, peak in peaks.items()}
        self.peak_sources = {
            name: peak.describe() + (f'; x {nodes} nodes'
                                     if name in scaled else '')
            for name, peak in peaks.items()}
        found = references.lookup(self.reference_family,
                                  self.reference_key or self.reference_family,
                                  self.vm_sku())
        if not found:
            return
        self.reference_sources = {name: ref.source
                                  for name, ref in found.items()}
        target = self.current_partition.fullname
        table = dict(self.reference.get(target, {}))
        for name, ref in found.items():
            table.setdefault(name, ref.as_reframe())
        if self.no_verdict_reasons:
            table = {name: (ref[0], None, None, ref[3])
                     for name, ref in table.items()}
        self.reference = {**self.reference, target: table}

    def merge_references(self, entries: dict, sources: dict) -> None:
        """Add ReFrame reference tuples (name -> (value, lower, upper,
        unit)) for this partition and where each comes from, keeping any
        the test already holds."""
        target = self.current_partition.fullname
        table = {**entries, **self.reference.get(target, {})}
        if table:
            self.reference = {**self.reference, target: table}
        self.reference_sources = {**sources, **self.reference_sources}
