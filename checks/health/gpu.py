"""GPU state from ``nvidia-smi -q -x`` (NVML's XML, schema v11 to v13).

Counts are None where the GPU reports N/A; clock event reasons are read
under both names NVIDIA used (``clocks_event_reasons`` since driver 535,
``clocks_throttle_reasons`` before)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

_NUMBER = re.compile(r'^\s*(-?[0-9]+(?:\.[0-9]+)?)')
_EVENT_PREFIXES = ('clocks_event_reason_', 'clocks_throttle_reason_')
_COUNTER_PREFIX = 'clocks_event_reasons_counters_'
# the counters' names -> the reasons' names
_COUNTER_NAMES = {'hw_therm_slowdown': 'hw_thermal_slowdown',
                  'sw_therm_slowdown': 'sw_thermal_slowdown',
                  'hw_power_brake': 'hw_power_brake_slowdown'}


@dataclass
class Gpu:
    index: int
    pci: str
    vbios: str | None = None
    serial: str | None = None
    uuid: str | None = None
    name: str | None = None
    counts: dict[str, int | None] = field(default_factory=dict)
    flags: dict[str, bool | None] = field(default_factory=dict)
    clock_events: list[str] = field(default_factory=list)  # active ones
    #: time spent in each clock event since the driver loaded, in us
    #: (schema v13's clocks_event_reasons_counters), by reason
    clock_event_us: dict[str, int] = field(default_factory=dict)
    gauges: dict[str, float | None] = field(default_factory=dict)

    @property
    def device(self) -> str:
        return f'gpu{self.index}'

    def identity(self) -> dict:
        """What names this GPU on a row (rows/builder.py's gpu_columns)."""
        return {'index': self.index, 'bus_id': self.pci,
                'serial': self.serial}


@dataclass
class Sample:
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[Gpu] = field(default_factory=list)


def _text(node, path: str) -> str | None:
    found = node.find(path) if node is not None else None
    if found is None or found.text is None:
        return None
    text = found.text.strip()
    return None if text in ('', 'N/A') else text


def _number(node, path: str) -> float | None:
    text = _text(node, path)
    match = _NUMBER.match(text) if text else None
    return float(match.group(1)) if match else None


def _count(node, path: str) -> int | None:
    value = _number(node, path)
    return int(value) if value is not None else None


def _flag(node, path: str) -> bool | None:
    text = _text(node, path)
    if text is None:
        return None
    return text.lower() in ('yes', 'active', 'true')


def _ecc(gpu, scope: str, kind: str) -> int | None:
    """DBE/SBE count of one scope (volatile, aggregate): the sum of the
    DRAM and SRAM counts (v12+) or of the device-memory, register-file...
    counts of older schemas' single_bit/double_bit blocks."""
    base = gpu.find(f'ecc_errors/{scope}')
    if base is None:
        return None
    suffix = 'uncorrectable' if kind == 'dbe' else 'correctable'
    values = [_count(base, tag) for tag in (f'sram_{suffix}',
                                             f'dram_{suffix}')]
    older = base.find('double_bit' if kind == 'dbe' else 'single_bit')
    if older is not None:
        values += [_count(older, child.tag) for child in older
                   if child.tag != 'total'] or [_count(older, 'total')]
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def _clock_events(gpu) -> list[str]:
    active = []
    for block in ('clocks_event_reasons', 'clocks_throttle_reasons'):
        for child in gpu.findall(block + '/*'):
            name = child.tag
            for prefix in _EVENT_PREFIXES:
                if name.startswith(prefix):
                    name = name[len(prefix):]
            if (child.text or '').strip().lower() == 'active':
                active.append(name)
    return active


def _clock_event_us(gpu) -> dict[str, int]:
    found = {}
    for child in gpu.findall('clocks_event_reasons_counters/*'):
        name = child.tag[len(_COUNTER_PREFIX):] \
            if child.tag.startswith(_COUNTER_PREFIX) else child.tag
        match = _NUMBER.match(child.text or '')
        if match:
            found[_COUNTER_NAMES.get(name, name)] = int(float(match.group(1)))
    return found


def _gpu(index: int, gpu) -> Gpu:
    link = gpu.find('pci/pci_gpu_link_info')
    return Gpu(
        index=index,
        pci=gpu.get('id', ''),
        vbios=_text(gpu, 'vbios_version'),
        serial=_text(gpu, 'serial'),
        uuid=_text(gpu, 'uuid'),
        name=_text(gpu, 'product_name'),
        counts={
            'ecc_dbe_volatile': _ecc(gpu, 'volatile', 'dbe'),
            'ecc_dbe_aggregate': _ecc(gpu, 'aggregate', 'dbe'),
            'ecc_sbe_volatile': _ecc(gpu, 'volatile', 'sbe'),
            'ecc_sbe_aggregate': _ecc(gpu, 'aggregate', 'sbe'),
            'retired_pages_dbe': _count(
                gpu, 'retired_pages/double_bit_retirement/retired_count'),
            'retired_pages_sbe': _count(
                gpu, 'retired_pages/multiple_single_bit_retirement/'
                     'retired_count'),
            'remapped_rows_uncorrectable': _count(
                gpu, 'remapped_rows/remapped_row_unc'),
        },
        flags={
            'retired_pages_pending': _flag(gpu, 'retired_pages/'
                                                'pending_retirement'),
            'remapped_rows_pending': _flag(gpu, 'remapped_rows/'
                                                'remapped_row_pending'),
            'remapped_rows_failure': _flag(gpu, 'remapped_rows/'
                                                'remapped_row_failure'),
        },
        clock_events=_clock_events(gpu),
        clock_event_us=_clock_event_us(gpu),
        gauges={
            'temperature_c': _number(gpu, 'temperature/gpu_temp'),
            'power_w': _number(gpu, 'gpu_power_readings/power_draw')
            if gpu.find('gpu_power_readings') is not None
            else _number(gpu, 'power_readings/power_draw'),
            'sm_clock_mhz': _number(gpu, 'clocks/sm_clock'),
            'mem_clock_mhz': _number(gpu, 'clocks/mem_clock'),
            'pcie_link_width': _number(link, 'link_widths/'
                                             'current_link_width'),
            'pcie_link_gen_max': _number(link, 'pcie_gen/max_link_gen'),
            'pcie_link_gen': _number(link, 'pcie_gen/current_link_gen'),
        },
    )


def parse(xml_text: str) -> Sample:
    """The GPUs of one ``nvidia-smi -q -x``; ValueError when the text is not
    that XML."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as error:
        raise ValueError(f'not nvidia-smi XML: {error}') from None
    if root.tag != 'nvidia_smi_log':
        raise ValueError(f'not nvidia-smi XML: root <{root.tag}>')
    return Sample(driver_version=_text(root, 'driver_version'),
                  cuda_version=_text(root, 'cuda_version'),
                  gpus=[_gpu(i, gpu)
                        for i, gpu in enumerate(root.findall('gpu'))])
