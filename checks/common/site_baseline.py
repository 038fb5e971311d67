"""The site baseline layer (``CLUSTERPROOF_BASELINES``) as a ReFrame run and
acceptance read it: the entries `clusterproof baseline` wrote
(scripts/comparison/baseline.py builds them), one lookup, and one judgement.

An entry is found by the cluster, the test class, the reference key the
row is stored with (checks/common/reference_key.py) and the device; it is
a layer of its own, checked beside the published reference and never in
its place. No ReFrame here: the plugin is site_baseline_verdicts.py.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SETTING = 'CLUSTERPROOF_BASELINES'
BASIS = 'site_baseline'
#: How a failure on this basis starts, in a ReFrame fail reason and a row's
#: check_fail_reason (acceptance reads a case's failure by it).
LABEL = 'site baseline'


@dataclass
class Entry:
    cluster: str
    test: str
    key: str
    device: str
    value: float
    lower: float          # fractions of value, as ReFrame's thresholds
    upper: float
    unit: str
    source: str
    command: str
    runs: int = 0
    nodes: int = 0
    first: str = ''
    last: str = ''
    spread: float = 0.0
    dropped: int = 0
    refused: str = ''     # why it is not written (too little history)
    previous: float | None = None

    @property
    def id(self) -> tuple:
        return (self.cluster, self.test, self.key, self.device)

    def bounds(self) -> tuple[float, float]:
        return (self.value * (1 + self.lower), self.value * (1 + self.upper))

    def as_yaml(self) -> dict:
        return {'cluster': self.cluster, 'test': self.test, 'key': self.key,
                'device': self.device or None, 'value': self.value,
                'lower': self.lower, 'upper': self.upper, 'unit': self.unit,
                'source': self.source, 'command': self.command}


def read(directories) -> dict[tuple, Entry]:
    """Every entry of every ``*.yaml`` in the directories (later wins)."""
    entries = {}
    for directory in directories:
        for path in sorted(Path(directory).glob('*.yaml')):
            try:
                data = yaml.safe_load(path.read_text()) or {}
                for item in data.get('baselines') or []:
                    entry = Entry(
                        item['cluster'], item['test'], item['key'],
                        item.get('device') or '', float(item['value']),
                        float(item['lower']), float(item['upper']),
                        item.get('unit') or '', item.get('source', ''),
                        item.get('command', ''))
                    entries[entry.id] = entry
            except (OSError, yaml.YAMLError, AttributeError, KeyError,
                    TypeError, ValueError) as error:
                raise ValueError(f'site baseline {path}: not a baseline '
                                 f'file ({type(error).__name__}: {error})'
                                 ) from None
    return entries


def directories() -> list[str]:
    return [d for d in os.environ.get(SETTING, '').split(':') if d]


@dataclass
class Layer:
    """The baselines a run is judged against."""
    entries: dict[tuple, Entry] = field(default_factory=dict)

    @classmethod
    def from_setting(cls) -> 'Layer':
        return cls(read(directories()))

    def find(self, cluster: str, test: str, key: str, device: str
             ) -> Entry | None:
        return self.entries.get((cluster or '', test or '', key or '',
                                 device or ''))


def _signature(dirs: tuple[str, ...]) -> tuple:
    """What the files are now (a baseline rewritten mid-session is read
    again)."""
    found = []
    for directory in dirs:
        for path in sorted(Path(directory).glob('*.yaml')):
            try:
                stat = path.stat()
            except OSError:
                continue
            found.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(found)


@functools.lru_cache(maxsize=4)
def _layer(dirs: tuple[str, ...], signature: tuple) -> Layer:
    return Layer(read(dirs))


def current() -> Layer:
    """The layer CLUSTERPROOF_BASELINES names, read once per file version."""
    dirs = tuple(directories())
    return _layer(dirs, _signature(dirs)) if dirs else Layer()


def missed(value: float, entry: Entry, source: bool = True) -> str:
    """Why *value* is outside the entry's two-sided bounds ('' if inside),
    with the entry's source unless *source* is false."""
    low, high = entry.bounds()
    if low <= value <= high:
        return ''
    unit = f' {entry.unit}' if entry.unit else ''
    side = 'below' if value < low else 'above'
    off = abs(value - entry.value) / abs(entry.value) * 100 \
        if entry.value else 0.0
    bound = low if value < low else high
    where = f'; {entry.source}' if source and entry.source else ''
    return (f'{off:.1f}% {side} the site baseline {entry.value:,.6g}{unit} '
            f'(bound {bound:,.6g}{unit}{where})')


def cluster_of(system: str | None) -> str:
    """The cluster a row is stored under (config/results/rows/builder.py's
    cluster_name: CLUSTERPROOF_CLUSTER, else the ReFrame system)."""
    return os.environ.get('CLUSTERPROOF_CLUSTER') or system or ''
