"""Link flaps and XIDs from log lines (the journal since the first sample).

A flap is a 'lost carrier' line of an IPoIB device, counted per device the
way Azure's health checks count them (customTests/azure_ib_link_flapping.nhc:
grep -i 'lost carrier', the first 'ib...' word is the device). An XID is the
NVIDIA driver's 'NVRM: Xid (PCI:0000:3b:00): 79, ...' line."""
from __future__ import annotations

import re
from dataclasses import dataclass

_IB_DEVICE = re.compile(r'\b(ib[0-9A-Za-z_]+)')
_XID = re.compile(r'NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+)\b')


@dataclass(frozen=True)
class Xid:
    pci: str   # '0000:3b:00'
    code: int
    line: str


def link_flaps(lines: list[str]) -> dict[str, int]:
    """{'ib6': 6}: 'lost carrier' lines per IPoIB device."""
    flaps: dict[str, int] = {}
    for line in lines:
        if 'lost carrier' not in line.lower():
            continue
        match = _IB_DEVICE.search(line.split(']', 1)[-1]) or \
            _IB_DEVICE.search(line)
        if match:
            flaps[match.group(1)] = flaps.get(match.group(1), 0) + 1
    return flaps


def xids(lines: list[str]) -> list[Xid]:
    found = []
    for line in lines:
        match = _XID.search(line)
        if match:
            found.append(Xid(match.group(1).lower(), int(match.group(2)),
                             line.strip()))
    return found


def gpu_of_xid(xid: Xid, pci_ids: list[str]) -> int | None:
    """The index of the GPU whose bus id ('00000000:3B:00.0') holds the
    XID's 'PCI:0000:3b:00'; None when no GPU matches."""
    want = xid.pci.split(':')
    for index, pci in enumerate(pci_ids):
        have = pci.lower().replace('.', ':').split(':')
        # domain may be 8 or 4 hex digits; compare bus and device
        if len(want) >= 3 and len(have) >= 3 and \
                have[1:3] == want[1:3] and int(have[0] or '0', 16) == \
                int(want[0] or '0', 16):
            return index
    return None
