"""NVLink state per link from ``nvidia-smi nvlink -s`` ('GPU 7: NAME (UUID:
...)' then one '\t Link 3: 25 GB/s' or 'Link 3: <inactive>' line per link;
'NVML: Unable to retrieve NVLink information as all links are inactive'
when none is up), and its error counters from ``nvidia-smi nvlink -e``
('Link 0: Replay Errors: 0' lines under the same GPU headings). An empty
output means NVLink is not enabled there, and nothing is judged (as Azure's
health checks, azure_gpu_nvlink.nhc).

Each line is read once; a line that is neither a heading nor a link (an
elision such as '[...]' in a quoted excerpt) is kept in ``unread`` so that
a caller can say the output is not whole."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_GPU = re.compile(r'^GPU (\d+):\s*(.*?)\s*(?:\(UUID:\s*([^)]*)\))?\s*$')
_LINK = re.compile(r'^\s*Link (\d+):\s*(.*?)\s*$')
_SPEED = re.compile(r'^([0-9]+(?:\.[0-9]+)?)\s*GB/s$')
_COUNTER = re.compile(r'^(.+?):\s*(\d+)$')
ALL_INACTIVE = 'all links are inactive'


@dataclass
class Links:
    active: list[int] = field(default_factory=list)
    inactive: list[int] = field(default_factory=list)
    all_inactive: bool = False
    #: link -> its speed in GB/s, as nvidia-smi prints it
    speeds: dict[int, float] = field(default_factory=dict)
    #: link -> {counter name (replay_errors...): count} (nvlink -e)
    errors: dict[int, dict[str, int]] = field(default_factory=dict)
    name: str = ''
    uuid: str = ''

    def has_status(self) -> bool:
        """Whether ``nvlink -s`` listed this GPU (``-e`` alone does not
        say which links are up)."""
        return bool(self.active or self.inactive or self.all_inactive)

    def problem(self) -> str | None:
        if self.all_inactive:
            return 'all NVLinks inactive'
        if self.inactive:
            return 'NVLink ' + ', '.join(map(str, self.inactive)) + \
                ' inactive'
        return None

    def error_totals(self) -> dict[str, int]:
        """Each counter summed over the GPU's links."""
        totals: dict[str, int] = {}
        for counters in self.errors.values():
            for name, count in counters.items():
                totals[name] = totals.get(name, 0) + count
        return totals


def counter_name(words: str) -> str:
    """'Replay Errors' -> 'replay_errors'."""
    return '_'.join(re.findall(r'[a-z0-9]+', words.lower()))


@dataclass
class Output:
    gpus: dict[int, Links] = field(default_factory=dict)
    #: (line number, text) of each line after the first heading that is
    #: neither a heading nor a link
    unread: list[tuple[int, str]] = field(default_factory=list)


def read(lines: list[str]) -> Output:
    """Every GPU of ``nvidia-smi nvlink -s`` or ``-e`` (or both, one after
    the other), and the lines that are neither."""
    found = Output()
    current = None
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip('\r\n')
        gpu = _GPU.match(line)
        if gpu:
            current = found.gpus.setdefault(int(gpu.group(1)), Links())
            current.name = gpu.group(2) or current.name
            current.uuid = gpu.group(3) or current.uuid
            continue
        if current is None or not line.strip():
            continue
        if ALL_INACTIVE in line.lower():
            current.all_inactive = True
            continue
        link = _LINK.match(line)
        if not link:
            found.unread.append((number, line.strip()))
            continue
        index, state = int(link.group(1)), link.group(2)
        counter = _COUNTER.match(state)
        if counter:
            current.errors.setdefault(index, {})[
                counter_name(counter.group(1))] = int(counter.group(2))
            continue
        if 'inactive' in state.lower():
            current.inactive.append(index)
            continue
        current.active.append(index)
        speed = _SPEED.match(state)
        if speed:
            current.speeds[index] = float(speed.group(1))
    return found


def parse(lines: list[str]) -> dict[int, Links]:
    """{GPU index: its links}."""
    return read(lines).gpus
