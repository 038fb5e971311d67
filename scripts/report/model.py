"""What the report shows, gathered by running the shipped queries: one
trend series per cluster, SKU, test, metric and device; the latest verdict
per node; bad nodes (failing or outlying) and regressions first."""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from pathlib import Path

from checks.health.assessment import NOT_AVAILABLE_METRIC, SUMMARY_METRIC
from scripts.query import library
from scripts.query.runner import Runner
from scripts.report import verdicts

# Health rows that summarise a device or say what was not available: no
# trend to draw (bad nodes show their findings; the counters keep theirs).
HEALTH_NOTES = (SUMMARY_METRIC, NOT_AVAILABLE_METRIC)


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
    #: acceptance's verdicts, nodes x checks, one grid per partition
    grids: list = dataclasses.field(default_factory=list)

    def groups(self) -> dict[tuple[str, str], list[Series]]:
        """Series by (cluster, VM SKU), in a stable order."""
        grouped = defaultdict(list)
        for series in self.series:
            grouped[(series.cluster or '', series.vm_sku or '')].append(series)
        return dict(sorted(grouped.items()))


def _series(trends: list[dict]) -> list[Series]:
    by_key = defaultdict(list)
    for row in trends:
        if row['check_perf_var'] in HEALTH_NOTES:
            continue
        key = (row['cluster'], row['vm_sku'], row['test'],
               row['check_perf_var'], row['device'] or '',
               row['check_perf_unit'])
        by_key[key].append(row)
    return [Series(*key[:5], key[5] or '', sorted(days, key=lambda d: d['day']))
            for key, days in sorted(by_key.items(),
                                    key=lambda item: tuple(map(str, item[0])))]


# latest_by_node.kql's name for the rows of a failure without a node list
# (a hand-ingested output without --node, a job that never ran): listed
# with the latest verdicts, never as a bad node.
NO_NODE = '(no node)'


BASIS_WORDS = {'published': 'published reference',
               'site_baseline': 'site baseline', 'peers': 'peers'}


def _bad_nodes(latest: list[dict], outliers: list[dict],
               judged: set[str] = frozenset()) -> list[dict]:
    """A node is bad when its latest verdict of a test is a failure, or it
    is an outlier among its peers in a run (*outliers* holds outliers
    only) that acceptance did not judge itself (*judged*: the record_ids
    of the rows its summaries judged; a flag acceptance found flaky is
    not bad). Each finding of a node is shown once, its latest run, with
    how many earlier runs found the same: the table follows the nodes and
    checks, not the history."""
    found = [{'cluster': r['cluster'], 'partition': r['check_partition'],
              'node': r['node'], 'why': f"{r['check_name']} failed"
              + (f" ({BASIS_WORDS.get(r.get('verdict_basis'), r.get('verdict_basis'))})"
                 if r.get('verdict_basis') else ''),
              'detail': r['check_fail_reason'] or '', 'when': r['completed']}
             for r in latest if r['check_result'] == 'fail'
             and r['node'] != NO_NODE
             # a tool missing on the node: not measured, as acceptance says
             and not verdicts.tool_missing(r['check_fail_reason'])]
    # an acceptance run already judged its peers: its verdict says it
    judged_nodes = {(r['cluster'], r['check_partition'], r['node'],
               r['check_name'].split('_')[0]) for r in latest
              if r['check_result'] == 'fail'
              and r.get('verdict_basis') == 'peers'}
    for r in outliers:
        if not r['outlier'] or (r['cluster'], r['check_partition'],
                                r['node'], r['test']) in judged_nodes \
                or r.get('record_id') in judged:
            continue
        device = f" {r['device']}" if r['device'] else ''
        how = ('implausible value' if verdicts.implausible(
            r['value'], r['peer_median']) else f"{r['worse_pct']:g}% worse")
        found.append({
            'cluster': r['cluster'], 'partition': r['check_partition'],
            'node': r['node'],
            'why': f"{r['test']} {r['check_perf_var']}{device}: outlier",
            'detail': f"{r['value']:g} {r['check_perf_unit']} against a peer "
                      f"median of {r['peer_median']:g} "
                      f"{r['check_perf_unit']} ({how}, "
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


def what_changed_text(changes: list[dict], cluster, nodes) -> str:
    """'hb-3: kernel_version 5.15.0-1053-azure -> 5.15.0-1061-azure (25%
    of the SKU's nodes)' for the nodes named, from what_changed."""
    parts = []
    for c in changes:
        if c['cluster'] != cluster or c['node'] not in nodes:
            continue
        text = (f"{c['node']}: {c['field']} {c['before'] or '(none)'} -> "
                f"{c['after'] or '(none)'} ({c['fleet_share_pct']:g}% of the "
                "SKU's nodes)")
        if c.get('host_failed_before_as'):
            text += f", host failed before as {c['host_failed_before_as']}"
        parts.append(text)
    return '; '.join(parts)


def _with_changes(rows: list[dict], changes: list[dict], nodes_of) -> list:
    return [{**row, 'what_changed': what_changed_text(
        changes, row.get('cluster'), nodes_of(row))} for row in rows]


def gather(runner: Runner, home: Path | None = None) -> Report:
    """Everything the page shows; acceptance's verdict grid from the
    acceptance summaries under *home* where there are any, else from the
    latest verdict rows."""
    outliers = library.outliers_only()
    queries = ('latest_by_node', 'trends', outliers, 'regressions',
               'run_summary', 'what_changed')
    runner.expect(*queries)          # the store is read once for all six
    latest = runner.run('latest_by_node').records()
    changes = runner.run('what_changed').records()
    # Failures first, then by cluster and node.
    latest.sort(key=lambda r: (r['check_result'] != 'fail',
                               r['cluster'] or '', r['node'] or '',
                               r['check_name'] or ''))
    summaries = verdicts.read_summaries(home) if home else []
    grids = verdicts.grids_of_summaries(summaries) if summaries else \
        verdicts.grids_of_rows(latest)
    return Report(
        grids=grids,
        source=runner.where,
        generated=dt.datetime.now(dt.timezone.utc),
        series=_series(runner.run('trends').records()),
        latest_by_node=latest,
        bad_nodes=_with_changes(
            _bad_nodes(latest, runner.run(outliers).records(),
                       verdicts.judged_records(summaries)),
            changes, lambda row: [row['node']]),
        regressions=_with_changes(
            runner.run('regressions').records(), changes,
            lambda row: list(row.get('check_job_nodelist') or [])),
        runs=runner.run('run_summary').records())
