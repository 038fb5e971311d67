"""NVLink state per link from ``nvidia-smi nvlink -s`` ('GPU 7: NAME (UUID:
...)' then one '\t Link 3: 25 GB/s' or 'Link 3: <inactive>' line per link;
'NVML: Unable to retrieve NVLink information as all links are inactive'
when none is up). An empty output means NVLink is not enabled there, and
nothing is judged (as Azure's health checks, azure_gpu_nvlink.nhc)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_GPU = re.compile(r'^GPU (\d+):')
_LINK = re.compile(r'^\s*Link (\d+):\s*(.*?)\s*$')
ALL_INACTIVE = 'all links are inactive'


@dataclass
class Links:
    active: list[int] = field(default_factory=list)
    inactive: list[int] = field(default_factory=list)
    all_inactive: bool = False

    def problem(self) -> str | None:
        if self.all_inactive:
            return 'all NVLinks inactive'
        if self.inactive:
            return 'NVLink ' + ', '.join(map(str, self.inactive)) + \
                ' inactive'
        return None


def parse(lines: list[str]) -> dict[int, Links]:
    """{GPU index: its links}."""
    gpus: dict[int, Links] = {}
    current = None
    for line in lines:
        gpu = _GPU.match(line)
        if gpu:
            current = gpus.setdefault(int(gpu.group(1)), Links())
            continue
        if current is None:
            continue
        if ALL_INACTIVE in line:
            current.all_inactive = True
            continue
        link = _LINK.match(line)
        if link:
            where = current.inactive if 'inactive' in link.group(2) \
                else current.active
            where.append(int(link.group(1)))
    return gpus
