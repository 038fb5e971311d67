"""The site's own baseline: what this cluster's passing runs measured, per
reference key, as a layer judged beside the published references (never
replacing them).

`clusterproof baseline` builds it from the store (build()), writes one
``<family>.yaml`` per check family into a directory, and the setting
``CLUSTERPROOF_BASELINES`` (``:``-separated directories) points ReFrame runs
and acceptance at it (checks/common/site_baseline.py reads it; a plain
ReFrame run judges its rows against it: site_baseline_verdicts.py). An entry is
found by the cluster, the test class, the row's
reference key (metric, SKU or ``system:partition``, method fingerprint,
node count, fabric) and the device: a sandbox that declares an Azure SKU
keeps its own baseline under its own cluster.

The value is the median of the passing rows that remain after iterative
outlier removal (values beyond 3.5 robust z of the median are dropped until
none is, as Microsoft SuperBench's `sb result generate-baseline` cleans a
fleet's results: https://microsoft.github.io/superbenchmark/docs/cli);
the bounds are two-sided (a result far above the fleet is as suspicious as
one below: a cache, a wrong size): +-max(10%, 3.5 robust standard
deviations).
"""
from __future__ import annotations

import functools
import json
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from checks.common import site_baseline
from checks.common.reference_key import local_sku, reference_key
from checks.common.site_baseline import BASIS, SETTING, Entry, read  # noqa: F401
from config.results.rows.schema import HEALTH_FACILITY
from scripts.comparison.peers import (MAD_SCALE, VERDICT_FACILITY,
                                   completed, test_of)

DEFAULT_MIN_RUNS = 5
#: the least band of a baseline entry (Azure's HBv4 STREAM guidance: more
#: than 10% below, check the configuration; the module's docstring)
DEFAULT_TOLERANCE = 0.10
#: the robust z of an outlier left out, and of the band (Iglewicz and
#: Hoaglin's modified z-score cut-off, as SuperBench uses it)
DEFAULT_Z_LIMIT = 3.5
MAX_ROUNDS = 20
# check_params that say where or how often, not how: left out of the key.
_NOT_METHOD = {'no_verdict_reasons', 'method_differences', 'measured_method',
               'reference_method', 'follow_reference_method'}
# Test class prefix -> the family file (as checks/references/<family>.yaml).
_FAMILIES = (('MpiStage', 'mpi_stage'), ('Stream', 'stream'),
             ('Hpcg', 'hpcg'), ('Hpcc', 'hpcc'), ('Hpl', 'hpl'),
             ('Osu', 'osu'), ('Nccl', 'nccl'), ('Perftest', 'perftest'),
             ('Ior', 'ior'))


def family_of(test: str) -> str:
    for prefix, family in _FAMILIES:
        if test.startswith(prefix):
            return family
    return test.lower() or 'other'


def _params(row: dict) -> dict:
    params = row.get('check_params') or {}
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            return {}
    return params if isinstance(params, dict) else {}


def _nodes(row: dict) -> list:
    """check_job_nodelist as a list (Log Analytics may answer its JSON)."""
    nodes = row.get('check_job_nodelist') or []
    if isinstance(nodes, str):
        try:
            nodes = json.loads(nodes)
        except ValueError:
            nodes = [nodes]
    return list(nodes) if isinstance(nodes, (list, tuple)) else []


def short_sku(vm_sku: str | None) -> str:
    if vm_sku and vm_sku.lower().startswith('standard_'):
        return vm_sku[len('standard_'):]
    return vm_sku or ''


def row_key(row: dict) -> str:
    """The row's reference key: the one it was stored with, else the same
    format derived from its metric, SKU (or system:partition), scalar
    check parameters and node count."""
    if row.get('reference_key'):
        return row['reference_key']
    method = tuple(sorted(
        (name, value) for name, value in _params(row).items()
        if not name.startswith('.') and name not in _NOT_METHOD
        and isinstance(value, (str, int, float, bool))))
    return _derived_key(row.get('check_perf_var') or '?', row.get('vm_sku'),
                        row.get('check_system'), row.get('check_partition'),
                        method, len(_nodes(row)) or 1)


@functools.lru_cache(maxsize=65536)
def _derived_key(metric, vm_sku, system, partition, method, nodes) -> str:
    sku = short_sku(vm_sku) or local_sku(system, partition)
    return reference_key(metric, sku.replace('|', '/'), dict(method), nodes)


def entry_id(row: dict) -> tuple:
    return (row.get('cluster') or '', test_of(row), row_key(row),
            row.get('device') or '')


def _day(when) -> str:
    """'2026-11-20' of a datetime or an ISO 8601 string."""
    return (when.isoformat() if hasattr(when, 'isoformat') else str(when))[:10]


def _mad(values: list[float], median: float) -> float:
    return statistics.median(abs(v - median) for v in values)


def robust_values(values: list[float], z_limit: float = DEFAULT_Z_LIMIT
                  ) -> list[float]:
    """Drop values beyond z_limit robust z of the median until none is."""
    kept = list(values)
    for _ in range(MAX_ROUNDS):
        median = statistics.median(kept)
        mad = _mad(kept, median)
        if not mad:
            return kept
        inside = [v for v in kept
                  if abs(v - median) <= z_limit * MAD_SCALE * mad]
        if len(inside) == len(kept):
            return kept
        kept = inside
    return kept


def passing_rows(rows) -> list[dict]:
    """Measurements of passing runs: ReFrame passed the test, no basis
    failed the metric (acceptance verdict rows included); health counters
    are judged by their own rules, never baselined."""
    rows = list(rows)
    failed = {r.get('judged_record_id') for r in rows
              if r.get('judged_record_id')
              and r.get('check_perf_result') == 'fail'}
    return [r for r in rows
            if r.get('check_perf_value') is not None
            and not r.get('judged_record_id')
            and r.get('facility') not in (VERDICT_FACILITY, HEALTH_FACILITY)
            and r.get('check_result') == 'pass'
            and r.get('check_perf_result') != 'fail'
            and r.get('record_id') not in failed]


def build(rows, command: str, min_runs: int = DEFAULT_MIN_RUNS,
          tolerance: float = DEFAULT_TOLERANCE,
          previous: dict[tuple, 'Entry'] | None = None) -> list[Entry]:
    """One entry per (cluster, test, key, device) of the passing rows."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in passing_rows(rows):
        groups[entry_id(row)].append(row)
    entries = []
    for ident, members in sorted(groups.items()):
        values = [float(r['check_perf_value']) for r in members]
        kept = robust_values(values)
        median = statistics.median(kept)
        spread = MAD_SCALE * _mad(kept, median)
        width = max(tolerance, DEFAULT_Z_LIMIT * spread / abs(median)) \
            if median else tolerance
        runs = len({r.get('session_id') for r in members})
        nodes = len({n for r in members for n in _nodes(r)})
        times = sorted(_day(r.get('completed') or completed(r))
                       for r in members)
        unit = members[0].get('check_perf_unit') or ''
        source = (f'site baseline: {runs} runs on {nodes} nodes, '
                  f'{times[0]}..{times[-1]}, median {median:.6g} {unit}, '
                  f'spread {spread:.3g} {unit} (1.4826 x MAD'
                  + (f'; {len(values) - len(kept)} outliers left out'
                     if len(kept) < len(values) else '') + ')')
        entry = Entry(*ident, value=round(median, 6), lower=round(-width, 4),
                      upper=round(width, 4), unit=unit, source=source,
                      command=command, runs=runs, nodes=nodes,
                      first=times[0], last=times[-1], spread=spread,
                      dropped=len(values) - len(kept))
        if runs < min_runs:
            entry.refused = f'{runs} runs, --min-runs {min_runs}'
        old = (previous or {}).get(entry.id)
        if old is not None:
            entry.previous = old.value
        entries.append(entry)
    return entries


# --- the files ----------------------------------------------------------------

HEADER = ('# Site baseline made by `{command}`: the median of this site\'s '
          'passing runs per\n# reference key, judged beside the published '
          'references (CLUSTERPROOF_BASELINES).\n')


def write(entries: list[Entry], directory: Path) -> list[Path]:
    by_family: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        if not entry.refused:
            by_family[family_of(entry.test)].append(entry)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for family, members in sorted(by_family.items()):
        path = directory / f'{family}.yaml'
        partial = path.with_name(path.name + '.partial')
        partial.write_text(HEADER.format(command=members[0].command)
                           + yaml.safe_dump(
                               {'baselines': [e.as_yaml() for e in members]},
                               sort_keys=False, width=100))
        os.replace(partial, path)
        written.append(path)
    return written


class Layer(site_baseline.Layer):
    """The baselines acceptance judges against (CLUSTERPROOF_BASELINES),
    found for stored rows."""

    @functools.cached_property
    def _tests(self) -> set[tuple[str, str]]:
        return {(e.cluster, e.test) for e in self.entries.values()}

    def entry_for(self, row: dict) -> Entry | None:
        if (row.get('cluster') or '', test_of(row)) not in self._tests:
            return None   # no key to derive (the most rows, on a fleet)
        return self.find(*entry_id(row))


@dataclass(frozen=True)
class Verdict:
    row: dict
    entry: Entry
    fail: bool
    reason: str


def judge(row: dict, entry: Entry) -> Verdict:
    reason = site_baseline.missed(float(row['check_perf_value']), entry)
    return Verdict(row, entry, bool(reason), reason)


def judge_rows(rows, layer: Layer) -> list[Verdict]:
    found = []
    for row in rows:
        if row.get('check_perf_value') is None or row.get('judged_record_id'):
            continue
        entry = layer.entry_for(row)
        if entry is not None:
            found.append(judge(row, entry))
    return found
