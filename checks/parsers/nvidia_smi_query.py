"""The GPU samples a job takes while its load runs:

    nvidia-smi --query-gpu=index,pci.bus_id,serial,clocks.sm,
        temperature.gpu,power.draw,clocks_throttle_reasons.active
        --format=csv,noheader,nounits -l <seconds>

(field names from ``nvidia-smi --help-query-gpu``; ``-l`` repeats the query
every that many seconds). One line per GPU per sample, e.g.
``3, 00000000:9B:00.0, 1654922009876, 1980, 61, 690.32, 0x0000000000000000``.

Per GPU: the lowest SM clock (MHz), the highest temperature (C) and power
(W) seen, and every clock event reason that was active in some sample
(the bit mask NVML reports, decoded with NVML's names). Lines that are not
samples (an error, N/A fields) are skipped: values that are not numbers
count as not sampled. Reads each line once.
"""
from __future__ import annotations

from dataclasses import dataclass, field

QUERY_FIELDS = ('index', 'pci.bus_id', 'serial', 'clocks.sm',
                'temperature.gpu', 'power.draw',
                'clocks_throttle_reasons.active')

#: NVML's clocks event reason bits (nvml.h, nvmlClocksEventReason*);
#: gpu_idle and applications_clocks_setting are not slowdowns.
REASON_BITS = {
    0x1: 'gpu_idle',
    0x2: 'applications_clocks_setting',
    0x4: 'sw_power_cap',
    0x8: 'hw_slowdown',
    0x10: 'sync_boost',
    0x20: 'sw_thermal_slowdown',
    0x40: 'hw_thermal_slowdown',
    0x80: 'hw_power_brake_slowdown',
    0x100: 'display_clock_setting',
}
NOT_SLOWDOWNS = {'gpu_idle', 'applications_clocks_setting'}


def command(seconds: int) -> str:
    return ('nvidia-smi --query-gpu=' + ','.join(QUERY_FIELDS)
            + f' --format=csv,noheader,nounits -l {seconds}')


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def reasons(mask: str) -> list[str]:
    """'0x0000000000000044' -> ['sw_power_cap', 'hw_thermal_slowdown']"""
    try:
        bits = int(mask, 16)
    except ValueError:
        return []
    return [name for bit, name in sorted(REASON_BITS.items()) if bits & bit]


@dataclass
class GpuDuring:
    index: int
    bus_id: str
    serial: str | None
    samples: int = 0
    sm_clock_min: float | None = None
    temp_max: float | None = None
    power_max: float | None = None
    reasons: set[str] = field(default_factory=set)

    def identity(self) -> dict:
        return {'index': self.index, 'bus_id': self.bus_id,
                'serial': self.serial}

    def slowdowns(self) -> list[str]:
        return sorted(self.reasons - NOT_SLOWDOWNS)


def _lower(old, new):
    return new if old is None or (new is not None and new < old) else old


def _higher(old, new):
    return new if old is None or (new is not None and new > old) else old


def parse(text: str) -> dict[int, GpuDuring]:
    gpus: dict[int, GpuDuring] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(',')]
        if len(cells) != len(QUERY_FIELDS) or not cells[0].isdigit():
            continue
        index = int(cells[0])
        gpu = gpus.get(index)
        if gpu is None:
            serial = cells[2] if cells[2] not in ('', '[N/A]', 'N/A') \
                else None
            gpu = gpus[index] = GpuDuring(index, cells[1], serial)
        gpu.samples += 1
        gpu.sm_clock_min = _lower(gpu.sm_clock_min, _number(cells[3]))
        gpu.temp_max = _higher(gpu.temp_max, _number(cells[4]))
        gpu.power_max = _higher(gpu.power_max, _number(cells[5]))
        gpu.reasons.update(reasons(cells[6]))
    return gpus
