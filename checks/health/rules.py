"""The health rules (checks/references/health.yaml) and what a SKU should
show: its InfiniBand line rate (peaks.yaml, perftest bw_avg), its GPUs'
PCIe link and NVLinks (health.yaml)."""
from __future__ import annotations

from ..common import references
from .assessment import Nominal

FAMILY = 'health'


def load() -> dict:
    return references.load_family(FAMILY)


def nominal(vm_sku: str | None) -> Nominal:
    sku = references.short_sku(vm_sku)
    if not sku:
        return Nominal()
    peaks = references.lookup_peaks('perftest', vm_sku)
    rate = peaks.get('bw_avg')
    data = load()
    pcie = references._entry_for_sku(data, sku, 'pcie') or {}
    source = pcie.get('source', '')
    links = references._entry_for_sku(data, sku, 'nvlink') or {}
    links_source = links.get('source', '')
    return Nominal(
        ib_rate_gbps=rate.value if rate else None,
        ib_rate_source=rate.describe() if rate else '',
        pcie_width=pcie.get('width'), pcie_gen=pcie.get('gen'),
        pcie_source=data.get('sources', {}).get(source, source),
        nvlink_links=links.get('links'), nvlink_gbps=links.get('gbps'),
        nvlink_source=data.get('sources', {}).get(links_source,
                                                  links_source))
