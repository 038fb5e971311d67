"""The same failure on most nodes of a partition is the partition's, not
the nodes': a perftest built without CUDA (`ib_write_bw: unrecognized
option '--use_cuda=0'`), a wrong reference, a missing library. Blaming
every node for it would drain the cluster.

A failure is common-mode when at least ``share`` (default half) of the
partition's judged units at that scope fail it, and at least
``min_units`` (default 3) do. A unit is a node for single-node checks and
a node pair for pair checks (one bad node fails two pairs of a ring, not
half of them). Failures are "the same" when their check, metric and
reason agree once numbers and node names are masked: the wording of a
failure, not its values.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

DEFAULT_SHARE = 0.5
DEFAULT_MIN_UNITS = 3
_NUMBER = re.compile(r'[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?')


def masked(reason: str, names=()) -> str:
    """'triad_bw 1190.4 below 8000 on sb-n3' -> 'triad_bw # below # on <node>'."""
    text = ' '.join((reason or '').split())
    for name in sorted((n for n in names if n), key=len, reverse=True):
        text = text.replace(name, '<node>')
    return _NUMBER.sub('#', text)


@dataclass(frozen=True)
class Failure:
    """One unit's failure, as common_mode() needs it."""
    partition: str
    scope: str            # 'node' or 'pair'
    unit: frozenset       # the node, or the pair's two nodes
    check: str
    metric: str | None
    reason: str


@dataclass(frozen=True)
class Shared:
    partition: str
    scope: str
    check: str
    metric: str | None
    reason: str           # the masked wording
    example: str          # one failure's own wording
    units: tuple          # the failing units, sorted
    judged: int           # units judged at this scope in the partition

    def describe(self) -> str:
        what = f'{len(self.units)} of {self.judged} ' + \
            ('nodes' if self.scope == 'node' else 'node pairs')
        return f'configuration or software ({what}): {self.example}'


def common_mode(failures: list[Failure],
                judged: dict[tuple[str, str], int],
                share: float = DEFAULT_SHARE,
                min_units: int = DEFAULT_MIN_UNITS) -> list[Shared]:
    """The shared failures; ``judged``: {(partition, scope): units judged}."""
    groups: dict[tuple, list[Failure]] = defaultdict(list)
    for failure in failures:
        names = tuple(failure.unit)
        groups[(failure.partition, failure.scope, failure.check,
                failure.metric, masked(failure.reason, names))].append(
            failure)
    found = []
    for (partition, scope, check, metric, reason), members in groups.items():
        units = {m.unit for m in members}
        total = judged.get((partition, scope), len(units))
        if len(units) >= min_units and len(units) >= share * total:
            found.append(Shared(partition, scope, check, metric, reason,
                                ' '.join(members[0].reason.split()),
                                tuple(sorted(','.join(sorted(u))
                                             for u in units)), total))
    return sorted(found, key=lambda s: (s.partition, s.check,
                                        s.metric or '', s.reason))
