"""InfiniBand ports from a sysfs dump: 'HCA/ports/N/counters/NAME:VALUE'
lines (grep -H under /sys/class/infiniband), as the sampler writes them."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_RATE = re.compile(r'^\s*([0-9.]+)\s*Gb/sec')


@dataclass
class Port:
    hca: str
    port: str
    state: str | None = None        # 'ACTIVE' of '4: ACTIVE'
    rate_gbps: float | None = None  # 400.0 of '400 Gb/sec (4X NDR)'
    link_layer: str | None = None   # 'InfiniBand' or 'Ethernet'
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def device(self) -> str:
        return f'{self.hca}/{self.port}'


@dataclass
class Sample:
    ports: dict[str, Port] = field(default_factory=dict)  # by device
    firmware: dict[str, str] = field(default_factory=dict)  # by HCA


def _number(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def parse(lines: list[str]) -> Sample:
    """Ports and firmware from path:value lines; anything else is ignored."""
    sample = Sample()
    for line in lines:
        path, sep, value = line.partition(':')
        if not sep:
            continue
        parts = path.split('/')
        if len(parts) == 2 and parts[1] == 'fw_ver':
            sample.firmware[parts[0]] = value.strip()
            continue
        if len(parts) < 4 or parts[1] != 'ports':
            continue
        hca, port = parts[0], parts[2]
        entry = sample.ports.setdefault(f'{hca}/{port}', Port(hca, port))
        name = parts[3]
        if name in ('counters', 'hw_counters') and len(parts) == 5:
            number = _number(value)
            if number is not None:
                entry.counters[parts[4]] = number
        elif name == 'state':
            entry.state = value.split(':')[-1].strip() or None
        elif name == 'rate':
            match = _RATE.match(value)
            entry.rate_gbps = float(match.group(1)) if match else None
        elif name == 'link_layer':
            entry.link_layer = value.strip() or None
    return sample
