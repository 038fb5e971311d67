"""What the report shows, gathered by running the shipped queries: one
trend series per cluster, SKU, test, metric and device; the latest verdict
per node; bad nodes (failing or outlying) and regressions first."""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict

from scripts.query import library
from scripts.query.runner import Runner


@dataclasses.dataclass
class Series:
    cluster: str
    vm_sku: str
    test: str
    metric: str
    device: str
    unit: str
    days: list[dict]          # trends rows, oldest first

    @property
    def title(self) -> str:
        device = f' ({self.device})' if self.device else ''
        return f'{self.test} {self.metric}{device}'

    @property
    def latest(self) -> dict:
        return self.days[-1]

    def first_known(self, key: str):
        for day in reversed(self.days):
            if day.get(key) not in (None, ''):
                return day[key]
        return None


@dataclasses.dataclass
class Report:
    source: str
    generated: dt.datetime
    series: list[Series]
    latest_by_node: list[dict]
    bad_nodes: list[dict]
    regressions: list[dict]
    runs: list[dict]

    def groups(self) -> dict[tuple[str, str], list[Series]]:
        """Series by (cluster, VM SKU), in a stable order."""
        grouped = defaultdict(list)
        for series in self.series:
            grouped[(series.cluster or '', series.vm_sku or '')].append(series)
        return dict(sorted(grouped.items()))


def _series(trends: list[dict]) -> list[Series]:
    by_key = defaultdict(list)
    for row in trends:
        key = (row['cluster'], row['vm_sku'], row['test'],
               row['check_perf_var'], row['device'] or '',
               row['check_perf_unit'])
        by_key[key].append(row)
    return [Series(*key[:5], key[5] or '', sorted(days, key=lambda d: d['day']))
            for key, days in sorted(by_key.items(),
                                    key=lambda item: tuple(map(str, item[0])))]


BASIS_WORDS = {'published': 'published reference',
               'site_baseline': 'site baseline', 'peers': 'peers'}


def _bad_nodes(latest: list[dict], outliers: list[dict]) -> list[dict]:
    """A node is bad when its latest verdict of a test is a failure, or it
    is an outlier among its peers in a run (*outliers* holds outliers
    only). Each finding of a node is shown once, its latest run, with how
    many earlier runs found the same: the table follows the nodes and
    checks, not the history."""
    found = [{'cluster': r['cluster'], 'partition': r['check_partition'],
              'node': r['node'], 'why': f"{r['check_name']} failed"
              + (f" ({BASIS_WORDS.get(r.get('verdict_basis'), r.get('verdict_basis'))})"
                 if r.get('verdict_basis') else ''),
              'detail': r['check_fail_reason'] or '', 'when': r['completed']}
             for r in latest if r['check_result'] == 'fail']
    # an acceptance run already judged its peers: its verdict says it
    judged = {(r['cluster'], r['check_partition'], r['node'],
               r['check_name'].split('_')[0]) for r in latest
              if r['check_result'] == 'fail'
              and r.get('verdict_basis') == 'peers'}
    for r in outliers:
        if not r['outlier'] or (r['cluster'], r['check_partition'],
                                r['node'], r['test']) in judged:
            continue
        device = f" {r['device']}" if r['device'] else ''
        found.append({
            'cluster': r['cluster'], 'partition': r['check_partition'],
            'node': r['node'],
            'why': f"{r['test']} {r['check_perf_var']}{device}: outlier",
            'detail': f"{r['value']:g} {r['check_perf_unit']} against a peer "
                      f"median of {r['peer_median']:g} "
                      f"{r['check_perf_unit']} ({r['worse_pct']:g}% worse, "
                      f"{r['peers']} peers, robust z {r['robust_z']})",
            'when': r['completed']})
    latest_of = {}
    for finding in found:
        key = (finding['cluster'], finding['partition'], finding['node'],
               finding['why'])
        kept = latest_of.get(key)
        earlier = 0 if kept is None else kept['earlier'] + 1
        if kept is None or _later(finding['when'], kept['when']):
            latest_of[key] = {**finding, 'earlier': earlier}
        else:
            kept['earlier'] = earlier
    return sorted(latest_of.values(),
                  key=lambda b: (b['cluster'] or '', b['node'] or '',
                                 b['why']))


def _later(when, than) -> bool:
    return than is None or (when is not None and when > than)


def gather(runner: Runner) -> Report:
    outliers = library.outliers_only()
    queries = ('latest_by_node', 'trends', outliers, 'regressions',
               'run_summary')
    runner.expect(*queries)          # the store is read once for all five
    latest = runner.run('latest_by_node').records()
    # Failures first, then by cluster and node.
    latest.sort(key=lambda r: (r['check_result'] != 'fail',
                               r['cluster'] or '', r['node'] or '',
                               r['check_name'] or ''))
    return Report(
        source=runner.where,
        generated=dt.datetime.now(dt.timezone.utc),
        series=_series(runner.run('trends').records()),
        latest_by_node=latest,
        bad_nodes=_bad_nodes(latest, runner.run(outliers).records()),
        regressions=runner.run('regressions').records(),
        runs=runner.run('run_summary').records())
