"""A node against its peers: the other nodes of the same run that ran the
same test case (its node pin stripped) on the same partition, SKU, metric
and device.

The rule (one definition; bicep/queries/node_outliers.kql says the same in
KQL, and tests/query/test_comparison_peers.py holds them to it on one store;
scripts/comparison/README.md explains it and tests/bench/comparison_quality.py
measures it):

- only a check's primary metrics are judged (metrics.py); the others are
  recorded only ('not judged', ``primary`` False);
- a member is judged when it has at least ``min_peers`` peers (default 4,
  the node itself not counted: groups of 5 nodes or more);
- a member's peers' median and median absolute deviation (MAD) leave the
  member itself out; the median is the nearest-rank 50th percentile (the
  lower middle value for an even count), which is what KQL's
  ``percentile(x, 50)`` computes, so that Python and KQL agree exactly
  (see below);
- the spread used is the larger of the peers' own (1.4826 x MAD over the
  median, taken 3 standard errors high: x (1 + 3 x 1.17 / sqrt(peers)),
  as a MAD of few values is often far too small) and the
  metric's healthy spread: the site baseline's where the run wrote one on
  the row (``verdict_spread``), else the metric's assumed default
  (metrics.py); at least ``MIN_SPREAD``; at least ``SMALL_GROUP_SPREAD``
  (5 %) for a group of fewer than 31 peers without a site baseline, and
  ``SMOKE_SPREAD`` (5 %) for a smoke-size row: both are judged for gross
  faults only. This is the MAD floor: identical or tight peers no longer
  make every small deviation a huge robust z;
- a group too noisy to judge (the peers' own spread above ``max_spread``,
  default 15 %) is 'not judged', and says so ("not judged by peers: 4
  peers, spread 30%"); only a *gross loss* is judged there: a member
  worse than the median by more than ``GROSS_LOSS`` (50 %) and by more
  than ``GROSS_SPREADS`` (3) times the peers' own spread is flagged, and
  its re-run alone must be that far worse again to confirm it;
- a member is *flagged* (status 'fail', ``fail``; node_outliers'
  ``outlier``) when it is worse than the median by more than
  ``tolerance`` (default 5 %: so that a 10 % loss is still found through
  the noise of its measurement) **and** its robust z, ``(value - median)
  / spread``, is beyond its limit in the worse direction;
- the multiple-comparison guard sets that limit: a node (a pair, for a
  pair check) with M judged values in a run gets the per-value limit of
  Sidak's correction, so that a healthy node's chance to be flagged in a
  run is ``flag_alpha`` (default 5 %) whatever M: ``alpha = 1 - (1 -
  flag_alpha) ** (1 / M)`` and the limit is the normal quantile of ``1 -
  alpha`` (1.64 for one value, 2.58 for ten, 3.09 for fifty). The quantile
  is Abramowitz and Stegun's rational approximation 26.2.23 (absolute
  error < 4.5e-4), so KQL computes the same number. M counts the member's
  primary values of the run whose group has enough peers;
- a flag is *confirmed* (``still_fails``: acceptance's --confirm re-runs
  the check on that node alone) when the re-measurement alone is worse
  than the tolerance too and beyond ``z_limit`` (default 2.326, one-sided
  1 %) on the same median and spread; so a healthy node ends bad in about
  5 % x 1 % of runs whatever its M (tests/bench/comparison_quality.py
  measures it);
- a value more than ``IMPLAUSIBLE_RATIO`` (10) times off the median, either
  way, is reported as "implausible value", never as a percentage.

The median of an even count of peers stays the lower middle value: the
spread's upper bound and the small-group floor make the difference
between the two middle values (the issue's 4 peers 47.4, 42.0, 35.1, 34.2)
count as spread, not as a node's deviation.

Sources: Azure's HBv4 STREAM guidance ("more than 10% below: check the
configuration", https://learn.microsoft.com/azure/virtual-machines/hbv4-performance);
the MAD as a robust spread (Iglewicz and Hoaglin, "How to Detect and
Handle Outliers", ASQC 1993; see
https://www.itl.nist.gov/div898/handbook/eda/section3/eda35h.htm) and its
37 % efficiency (Rousseeuw and Croux, JASA 88 (1993) 1273); Sidak's
correction (https://en.wikipedia.org/wiki/%C5%A0id%C3%A1k_correction);
Abramowitz and Stegun 26.2.23
(https://personal.math.ubc.ca/~cbm/aands/page_933.htm).
"""
from __future__ import annotations

import bisect
import json
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from scripts.comparison import metrics
from scripts.query import library

MAD_SCALE = 1.4826   # x MAD estimates the standard deviation of a normal
DEFAULT_TOLERANCE = 0.05
#: the confirmation: the re-measurement alone must be beyond this robust
#: z (one test: one-sided 1 %): with a flag chance of 5 % per node, a
#: healthy node ends bad in about 5 % x 1 % of runs
DEFAULT_Z_LIMIT = 2.326
DEFAULT_MIN_PEERS = 4
DEFAULT_MAX_SPREAD = 0.15
#: a healthy node's chance, per run, to be flagged (and re-measured: the
#: confirmation), whatever its number of judged values
DEFAULT_FLAG_ALPHA = 0.05
#: a group of fewer peers without a site baseline assumes at least
#: SMALL_GROUP_SPREAD: the MAD of a few values can be far below the true
#: spread, and a default spread is only a guess (tests/bench/
#: comparison_quality.py: 5 nodes at 5 % CV blamed healthy nodes in over 10 %
#: of runs on the 1 % default, 16 nodes in 2 %); such a group is judged
#: for gross faults (about 15 % and more)
SMALL_GROUP_PEERS = 31
SMALL_GROUP_SPREAD = 0.05
#: the relative standard error of a spread estimated from the MAD of n
#: values is about 1.17 / sqrt(n) (its efficiency at the normal is 37 %:
#: Rousseeuw and Croux, JASA 88 (1993) 1273,
#: https://doi.org/10.1080/01621459.1993.10476408): the peers' own spread
#: is taken at 3 standard errors above, since a flag (and its confirmation
#: against the same peers) is likelier where it came out low
#: (tests/bench/comparison_quality.py: at 1.645, 16 nodes at 5 % CV still
#: ended healthy nodes bad in 7 to 21 runs per 1,000)
MAD_STANDARD_ERROR = 1.17
SPREAD_BOUND_Z = 3.0
#: the least spread assumed of any metric, whatever its baseline says
MIN_SPREAD = 0.005
#: the least spread assumed of a smoke-size row
SMOKE_SPREAD = 0.05
#: in a group too noisy to judge, a loss beyond both of these still is: a
#: node at half its peers' rate, or worse, is no noise of peers that spread
#: a third of that (a 2-core sandbox's HPL spreads 15-25 % over 4 peers;
#: a node capped at a quarter of a CPU measures a tenth of them)
GROSS_LOSS = 0.5
GROSS_SPREADS = 3.0
#: a value more than this many times off its peers' median (either way) is
#: no measurement of a working node: "implausible value", not a percentage
IMPLAUSIBLE_RATIO = 10.0
VERDICT_FACILITY = 'clusterproof-acceptance'
FAIL, PASS, NOT_JUDGED = 'fail', 'pass', 'not judged'

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


# --- the multiple-comparison guard -------------------------------------------

def upper_tail(z: float) -> float:
    """P(N(0, 1) > z)."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_quantile_above(alpha: float) -> float:
    """z with P(N(0, 1) > z) = alpha (0 < alpha <= 0.5): Abramowitz and
    Stegun 26.2.23, written as node_outliers.kql writes it."""
    t = math.sqrt(-2.0 * math.log(alpha))
    return t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (
        1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)


def value_z_limit(node_alpha: float, judged_values: int) -> float:
    """The per-value robust z limit of a member with *judged_values*
    judged values (Sidak)."""
    alpha = 1.0 - pow(1.0 - node_alpha, 1.0 / max(judged_values, 1))
    return normal_quantile_above(alpha)


@dataclass(frozen=True)
class Rule:
    tolerance: float = DEFAULT_TOLERANCE
    z_limit: float = DEFAULT_Z_LIMIT
    min_peers: int = DEFAULT_MIN_PEERS
    max_spread: float = DEFAULT_MAX_SPREAD
    flag_alpha: float = DEFAULT_FLAG_ALPHA

    def describe(self) -> str:
        return (f'flagged when worse than the peers\' median by more than '
                f'{100 * self.tolerance:g}% and beyond the robust z limit of '
                f'a {100 * self.flag_alpha:g}% chance per node and run '
                f'(Sidak over its judged values); bad when its re-run alone '
                f'is worse by more than {100 * self.tolerance:g}% and '
                f'beyond robust z {self.z_limit:g} too; at least '
                f'{self.min_peers} peers, spread at most '
                f'{100 * self.max_spread:g}%')


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
    mad: float | None     # the peers' own MAD (before the floor)
    worse: float | None   # fraction worse than the median (<0: better)
    robust_z: float | None   # on the spread used (the floor applied)
    fail: bool
    row: dict | None = None
    rule: Rule = Rule()
    status: str = PASS    # 'fail', 'pass' or 'not judged'
    why: str = ''         # why not judged (or the failure's reason)
    primary: bool = True  # False: a recorded-only metric
    spread: float | None = None   # relative spread used (1 sd / median)
    spread_source: str = ''
    z_limit: float | None = None  # the per-value flag limit (Sidak)
    judged_values: int = 0        # M: the member's judged values in the run

    @property
    def implausible(self) -> bool:
        return implausible(self.value, self.median)

    @property
    def tolerance_used(self) -> float | None:
        """The smallest loss that fails here: the tolerance, or the z
        limit times the spread used where that is larger."""
        if self.spread is None:
            return None
        if self.z_limit is None:   # a gross loss in a noisy group
            return gross_limit(self.spread)
        return max(self.rule.tolerance, self.z_limit * self.spread)

    def still_fails(self, value: float) -> bool:
        """Whether *value* (the member measured again, alone) confirms the
        flag against the same peers: worse than their median by more than
        the tolerance and beyond the rule's z_limit on the same spread."""
        if self.status != FAIL or self.spread is None:
            return False
        if self.z_limit is None:   # a gross loss in a noisy group
            worse = _worse(value, self.median, self.lower_is_better)
            return worse is not None and worse > gross_limit(self.spread)
        return _fails(value, self.median, self.spread,
                      self.lower_is_better, self.rule.tolerance,
                      self.rule.z_limit)

    def reason(self, unit: str | None = None) -> str:
        unit = f' {unit}' if unit else ''
        if self.status == NOT_JUDGED or self.median is None:
            return self.why
        if self.implausible:
            return (f'implausible value: {self.value:,.6g}{unit} against the '
                    f'{self.peers} peers\' median {self.median:,.6g}{unit} '
                    f'(more than {IMPLAUSIBLE_RATIO:g}x off)')
        side = 'above' if self.lower_is_better else 'below'
        z = '' if self.robust_z is None else \
            f', robust z {self.robust_z:+.1f}'
        limit = '' if self.z_limit is None else (
            f' (limit {self.z_limit:.1f} for {self.judged_values} judged '
            f'value{"s" if self.judged_values != 1 else ""}, spread '
            f'{100 * self.spread:.2g}%: {self.spread_source})')
        how = (f'{abs(100 * self.worse):.1f}% {side} '
               if self.worse is not None else '')
        gross = f' ({self.why})' if self.why else ''
        return (f'{how}the {self.peers} peers\' median '
                f'{self.median:,.6g}{unit}{z}{limit}{gross}')


def gross_limit(own_spread: float) -> float:
    """The least loss judged in a group whose own spread is too wide."""
    return max(GROSS_LOSS, GROSS_SPREADS * own_spread)


def implausible(value: float, median: float | None) -> bool:
    if not median:
        return False
    ratio = value / median
    return ratio <= 0 or ratio > IMPLAUSIBLE_RATIO or \
        ratio < 1 / IMPLAUSIBLE_RATIO


def _middle(count: int) -> int:
    """The index of the nearest-rank median in a sorted list."""
    return (count - 1) // 2


def _without(sorted_values: list[float], index: int, position: int) -> float:
    """sorted_values[position] once sorted_values[index] is removed."""
    return sorted_values[position + 1 if position >= index else position]


def leave_one_out(values: list[float]) -> list[tuple[float, float]]:
    """(median, MAD) of the others for each value, in the order given.
    O(n log n): the leave-one-out median takes at most two values, so the
    deviations are sorted once for each. Needs two values or more."""
    n = len(values)
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
        found.append((median, _without(devs, own, middle)))
    return found


@dataclass(frozen=True)
class Decision:
    status: str
    why: str
    spread: float | None
    z_limit: float | None


def uncertainty(peers: int) -> float:
    """The factor on the peers' own spread: its upper bound at
    SPREAD_BOUND_Z standard errors (MAD_STANDARD_ERROR / sqrt(peers))."""
    return 1.0 + SPREAD_BOUND_Z * MAD_STANDARD_ERROR / math.sqrt(peers)


def decide(value: float, median: float, mad: float, peers: int, lower: bool,
           rule: Rule, floor: float, judged_values: int) -> Decision:
    """One judged member: its status, the spread and limit used."""
    if not median:
        return Decision(NOT_JUDGED, 'not judged by peers: their median is 0',
                        None, None)
    own = MAD_SCALE * mad / abs(median)
    if own > rule.max_spread:
        worse = _worse(value, median, lower)
        if worse is not None and worse > gross_limit(own):
            return Decision(FAIL, f'a gross loss: peers too noisy, spread '
                            f'{100 * own:.3g}%, to judge a smaller one',
                            own, None)
        return Decision(NOT_JUDGED, f'not judged by peers: {peers} peers, '
                        f'spread {100 * own:.3g}%', None, None)
    spread = max(own * uncertainty(peers), floor)
    z_limit = value_z_limit(rule.flag_alpha, judged_values)
    fail = _fails(value, median, spread, lower, rule.tolerance, z_limit)
    return Decision(FAIL if fail else PASS, '', spread, z_limit)


def judge_group(values: list[float], lower: bool, rule: Rule,
                floor: float = metrics.STEADY, judged_values: int = 1
                ) -> list[tuple[int, float | None, float | None, bool]]:
    """(peers, median, mad, fail) for each value, in the order given, each
    against the others, every member with *judged_values* judged values
    and the spread *floor*."""
    n = len(values)
    if n - 1 < max(rule.min_peers, 1):
        return [(n - 1, None, None, False)] * n
    return [(n - 1, median, mad, decide(
        value, median, mad, n - 1, lower, rule, floor,
        judged_values).status == FAIL)
        for value, (median, mad) in zip(values, leave_one_out(values))]


def _worse(value, median, lower):
    if not median:
        return None
    return ((value - median) if lower else (median - value)) / abs(median)


def _z(value, median, spread):
    return (value - median) / (spread * abs(median)) \
        if median and spread else None


def _fails(value, median, spread, lower, tolerance, z_limit) -> bool:
    worse = _worse(value, median, lower)
    if worse is None or worse <= tolerance:
        return False
    z = _z(value, median, spread)
    return z is None or (z > z_limit if lower else z < -z_limit)


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


def is_smoke(row: dict) -> bool:
    """A smoke-size row (checks/common/job_request.py)."""
    params = row.get('check_params') or {}
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            return False
    return isinstance(params, dict) and params.get('size_profile') == 'smoke'


def spread_floor(row: dict, known: metrics.Primary | None, peers: int = 0
                 ) -> tuple[float, str]:
    """The healthy spread assumed of *row*'s metric, and where it comes
    from: the site baseline's (written on the row as verdict_spread) or the
    metric's default; at least MIN_SPREAD, SMOKE_SPREAD for a smoke size."""
    measured = row.get('verdict_spread')
    if measured is not None and measured > 0:
        floor, source = float(measured), 'site baseline'
    else:
        floor = known.spread if known else metrics.STEADY
        source = metrics.DEFAULT_SPREAD_SOURCE
    if floor < MIN_SPREAD:
        floor = MIN_SPREAD
    if source != 'site baseline' and peers < SMALL_GROUP_PEERS and \
            floor < SMALL_GROUP_SPREAD:
        floor, source = SMALL_GROUP_SPREAD, (
            f'{peers} peers and no site baseline')
    if is_smoke(row) and floor < SMOKE_SPREAD:
        floor, source = SMOKE_SPREAD, 'smoke size'
    return floor, source


def _session_member(row: dict, member: str) -> tuple:
    return (row.get('session_id') or '', member)


def judge_rows(rows, rules: Rules = Rules(),
               guard_key: Callable[[dict, str], tuple] = _session_member
               ) -> list[Judgement]:
    """Every measured member of every group of *rows*, judged against its
    peers; a member measured twice in a run (a retry) counts by its latest
    row. *guard_key*: what one node is for the multiple-comparison guard
    (default: the member in its run)."""
    latest: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        if not is_measurement(row):
            continue
        members = latest[group_of(row)]
        member = ','.join(row['check_job_nodelist'])
        if member not in members or completed(row) >= completed(
                members[member]):
            members[member] = row
    # first pass: each group's leave-one-out statistics, and M per member
    groups = []
    judged_values: dict[tuple, int] = defaultdict(int)
    for group, members in latest.items():
        names = sorted(members)
        first = members[names[0]]
        test = test_of(first)
        rule = rules.for_test(test)
        known = metrics.primary(test, first.get('check_perf_var'))
        values = [float(members[m]['check_perf_value']) for m in names]
        enough = len(values) - 1 >= max(rule.min_peers, 1)
        stats = leave_one_out(values) if enough else [(None, None)] * len(
            values)
        if enough and known:
            for name in names:
                judged_values[guard_key(members[name], name)] += 1
        groups.append((group, members, names, values, stats, rule, known,
                       test))
    judged = []
    for group, members, names, values, stats, rule, known, test in groups:
        first = members[names[0]]
        lower = lower_is_better(first.get('check_perf_var'),
                                first.get('check_perf_unit'))
        peers = len(values) - 1
        for member, value, (median, mad) in zip(names, values, stats):
            row = members[member]
            floor, source = spread_floor(row, known, peers)
            count = judged_values.get(guard_key(row, member), 0)
            if median is None:
                decision = Decision(
                    NOT_JUDGED, f'not judged by peers: {peers} peers, at '
                    f'least {rule.min_peers} needed', None, None)
            elif known is None:
                decision = Decision(
                    NOT_JUDGED, f'recorded only: not a primary metric of '
                    f'{test}', None, None)
            else:
                decision = decide(value, median, mad, peers, lower, rule,
                                  floor, count)
            spread = decision.spread
            judged.append(Judgement(
                group, member, value, lower, peers, median, mad,
                None if median is None else _worse(value, median, lower),
                None if median is None else _z(
                    value, median, spread if spread else max(
                        MAD_SCALE * mad / abs(median) if median else 0,
                        floor)),
                decision.status == FAIL, row, rule, decision.status,
                decision.why, known is not None, spread,
                source if spread and spread == floor else
                ('peers\' own' if spread else ''), decision.z_limit,
                count if known is not None else 0))
    return judged


def kql_with_rule(text: str, rule: Rule) -> str:
    """node_outliers.kql with this rule's settings in its `let` lines."""
    return library.with_settings(
        text, min_peers=f'{rule.min_peers:d}',
        max_worse_pct=f'{100 * rule.tolerance!r}',
        flag_alpha=f'{rule.flag_alpha!r}',
        max_spread_pct=f'{100 * rule.max_spread!r}')
