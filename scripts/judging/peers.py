"""A node against its peers: the other nodes of the same run that ran the
same test case (its node pin stripped) on the same partition, SKU, metric
and device.

The rule (one definition; bicep/queries/node_outliers.kql says the same in
KQL, and tests/query/test_judging_peers.py holds them to it on one store):

- a member is judged when it has at least ``min_peers`` peers (default 4,
  the node itself not counted: groups of 5 nodes or more);
- a member's peers' median and median absolute deviation (MAD) leave the
  member itself out; the median is the nearest-rank 50th percentile (the
  lower middle value for an even count), which is what KQL's
  ``percentile(x, 50)`` computes, so that Python and KQL agree exactly;
- a member fails when it is worse than that median by more than
  ``tolerance`` (a fraction, default 10%) **and** its robust z-score
  ``(value - median) / (1.4826 * MAD)`` is beyond ``z_limit`` (default 3.5)
  in the worse direction; where the MAD is 0 (identical peers) the
  tolerance alone decides.

Sources of the defaults: Azure's HBv4 STREAM guidance ("more than 10% below:
check the configuration", https://learn.microsoft.com/azure/virtual-machines/hbv4-performance)
and the MAD-based modified z-score cut-off of 3.5 (Iglewicz and Hoaglin,
"How to Detect and Handle Outliers", ASQC 1993; see
https://www.itl.nist.gov/div898/handbook/eda/section3/eda35h.htm).
"""
from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass

from scripts.query import library

MAD_SCALE = 1.4826   # x MAD estimates the standard deviation of a normal
DEFAULT_TOLERANCE = 0.10
DEFAULT_Z_LIMIT = 3.5
DEFAULT_MIN_PEERS = 4
VERDICT_FACILITY = 'clusterproof-acceptance'

# The parameters ReFrame appends to tell one node's copy of a test from
# another's: acceptance pins (-P pinned_nodes=...) and --distribute.
_PIN = re.compile(r'\s*%\.(?:pinned_nodes|part|nid)=.*$')
# Latencies and times get worse when they grow (as in results.kql).
_LOWER_IS_BETTER_NAME = re.compile(r'(?i)(lat|time)')
_LOWER_IS_BETTER_UNITS = {'us', 'usec', 'ms', 's'}


def unpinned(display_name: str | None) -> str:
    """'StreamCheck %.pinned_nodes=hb-3' -> 'StreamCheck'."""
    return _PIN.sub('', display_name or '')


def lower_is_better(metric: str | None, unit: str | None) -> bool:
    return bool(_LOWER_IS_BETTER_NAME.search(metric or '')) or \
        (unit or '').lower() in _LOWER_IS_BETTER_UNITS


@dataclass(frozen=True)
class Rule:
    tolerance: float = DEFAULT_TOLERANCE
    z_limit: float = DEFAULT_Z_LIMIT
    min_peers: int = DEFAULT_MIN_PEERS

    def describe(self) -> str:
        return (f'worse than the peers\' median by more than '
                f'{100 * self.tolerance:g}% and |robust z| > {self.z_limit:g}'
                f' (at least {self.min_peers} peers)')


@dataclass(frozen=True)
class Rules:
    """The default rule and the ones set per test class (family)."""
    default: Rule = Rule()
    by_test: tuple[tuple[str, Rule], ...] = ()

    def for_test(self, test: str) -> Rule:
        return dict(self.by_test).get(test, self.default)


@dataclass(frozen=True)
class Judgement:
    group: tuple
    member: str           # the node (or 'a,b' for a pair) as recorded
    value: float
    lower_is_better: bool
    peers: int
    median: float | None
    mad: float | None
    worse: float | None   # fraction worse than the median (<0: better)
    robust_z: float | None
    fail: bool
    row: dict | None = None
    rule: Rule = Rule()

    def still_fails(self, value: float) -> bool:
        """Whether *value* (the member measured again) fails against the
        same peers."""
        return self.median is not None and _fails(
            value, self.median, self.mad, self.lower_is_better, self.rule)

    def reason(self, unit: str | None = None) -> str:
        unit = f' {unit}' if unit else ''
        side = 'above' if self.lower_is_better else 'below'
        z = '' if self.robust_z is None else \
            f', robust z {self.robust_z:+.1f}'
        how = (f'{abs(100 * self.worse):.1f}% {side} '
               if self.worse is not None else '')
        return (f'{how}the {self.peers} peers\' median '
                f'{self.median:,.6g}{unit}{z}')


def _middle(count: int) -> int:
    """The index of the nearest-rank median in a sorted list."""
    return (count - 1) // 2


def _without(sorted_values: list[float], index: int, position: int) -> float:
    """sorted_values[position] once sorted_values[index] is removed."""
    return sorted_values[position + 1 if position >= index else position]


def judge_group(values: list[float], lower: bool, rule: Rule
                ) -> list[tuple[int, float | None, float | None, bool]]:
    """(peers, median, mad, fail) for each value, in the order given, each
    against the others. O(n log n): the leave-one-out median takes at most
    two values, so the deviations are sorted once for each."""
    n = len(values)
    if n - 1 < max(rule.min_peers, 1):
        return [(n - 1, None, None, False)] * n
    order = sorted(range(n), key=values.__getitem__)
    ranks = [0] * n
    for rank, index in enumerate(order):
        ranks[index] = rank
    ordered = [values[i] for i in order]
    middle = _middle(n - 1)
    deviations: dict[float, list[float]] = {}
    found = []
    for i, value in enumerate(values):
        median = _without(ordered, ranks[i], middle)
        if median not in deviations:
            deviations[median] = sorted(abs(v - median) for v in values)
        devs = deviations[median]
        own = bisect.bisect_left(devs, abs(value - median))
        mad = _without(devs, own, middle)
        found.append((n - 1, median, mad,
                      _fails(value, median, mad, lower, rule)))
    return found


def _worse(value, median, lower):
    if not median:
        return None
    return ((value - median) if lower else (median - value)) / abs(median)


def _z(value, median, mad):
    return (value - median) / (MAD_SCALE * mad) if mad else None


def _fails(value, median, mad, lower, rule) -> bool:
    worse = _worse(value, median, lower)
    if worse is None or worse <= rule.tolerance:
        return False
    z = _z(value, median, mad)
    return z is None or (z > rule.z_limit if lower else z < -rule.z_limit)


# --- rows of the results table -> groups -------------------------------------

def completed(row: dict) -> str:
    return row.get('check_job_completion_time') or row.get('TimeGenerated') \
        or ''


def is_measurement(row: dict) -> bool:
    return (row.get('check_perf_value') is not None
            and bool(row.get('check_job_nodelist'))
            and not row.get('judged_record_id'))


def group_of(row: dict) -> tuple:
    """What peers share, as node_outliers groups it."""
    return (row.get('session_id') or '', row.get('cluster') or '',
            row.get('check_partition') or '', row.get('vm_sku') or '',
            unpinned(row.get('check_display_name')),
            row.get('check_perf_var') or '', row.get('device') or '')


def test_of(row: dict) -> str:
    name = row.get('check_display_name')
    return name.split(' ')[0] if name else (row.get('check_name') or '')


def judge_rows(rows, rules: Rules = Rules()) -> list[Judgement]:
    """Every measured member of every group of *rows*, judged against its
    peers; a member measured twice in a run (a retry) counts by its latest
    row."""
    latest: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        if not is_measurement(row):
            continue
        members = latest[group_of(row)]
        member = ','.join(row['check_job_nodelist'])
        if member not in members or completed(row) >= completed(
                members[member]):
            members[member] = row
    judged = []
    for group, members in latest.items():
        names = sorted(members)
        first = members[names[0]]
        lower = lower_is_better(first.get('check_perf_var'),
                                first.get('check_perf_unit'))
        values = [float(members[m]['check_perf_value']) for m in names]
        rule = rules.for_test(test_of(first))
        for member, value, (peers, median, mad, fail) in zip(
                names, values, judge_group(values, lower, rule)):
            judged.append(Judgement(
                group, member, value, lower, peers, median, mad,
                None if median is None else _worse(value, median, lower),
                None if median is None else _z(value, median, mad),
                fail, members[member], rule))
    return judged


def kql_with_rule(text: str, rule: Rule) -> str:
    """node_outliers.kql with this rule's settings in its `let` lines."""
    return library.with_settings(
        text, min_peers=f'{rule.min_peers:d}',
        max_worse_pct=f'{100 * rule.tolerance!r}',
        max_robust_z=f'{float(rule.z_limit)!r}')
