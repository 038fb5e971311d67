"""Fill a test's ReFrame ``reference`` from the partition's VM SKU."""
from __future__ import annotations

import reframe as rfm

from . import references


class SkuReferences(rfm.RegressionTestPlugin):
    #: Data file checks/references/<family>.yaml
    reference_family = variable(str, value='')

    #: Entry under each SKU in that file
    reference_key = variable(str, value='')

    def vm_sku(self) -> str:
        return self.current_partition.extras.get('vm_sku', '')

    @run_before('performance')
    def _set_sku_references(self):
        if not self.reference_family:
            return
        peaks = references.lookup_peaks(self.reference_family, self.vm_sku())
        self.metric_peaks = {name: peak.value for name, peak in peaks.items()}
        self.peak_sources = {name: peak.describe()
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
