"""The report as one HTML file: inline CSS, inline SVG, no script and no
external reference, so it opens anywhere, offline."""
from __future__ import annotations

from html import escape

from scripts.query.output import human
from scripts.report import verdicts
from scripts.report.model import Report, Series
from scripts.report.verdicts import Grid
from scripts.report.svg import trend_chart

CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#1b1b1b;max-width:1400px}
h1{margin-bottom:4px}h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}
.meta{color:#555}table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;white-space:nowrap}
tr.fail td{background:#fde8e8}.verdict-fail{color:#b00020;font-weight:600}
.verdict-pass{color:#1b6e1b}.charts{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0;border:1px solid #ddd;padding:8px;background:#fff}
figcaption{font-size:13px;max-width:560px}.none{color:#555;font-style:italic}
svg .plot{fill:#fafafa;stroke:#ccc}svg .reference-band{fill:#d9f2d9}
svg .reference{stroke:#2e7d32;stroke-dasharray:4 3}svg .median{fill:none;stroke:#1f5fa8;stroke-width:2}
svg .range{stroke:#8fb3de;stroke-width:3}svg .day{fill:#1f5fa8}
svg .failed-day{fill:#d32f2f;stroke:#fff;stroke-width:1.5}svg .axis{font-size:11px;fill:#444}
table.grid td.cell{text-align:center;min-width:64px}table.grid a{color:inherit}
.v-bad{background:#d32f2f;color:#fff;font-weight:600}.v-suspect{background:#f57c00;color:#fff}
.v-flaky{background:#fbc02d}.v-not_judged{background:#b0bec5}.v-not_measured{background:#e0e0e0}
.v-powered_down{background:#eceff1;color:#555}.v-good{background:#c8e6c9}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #ccc}
"""


def _table(table_id: str, columns: list[tuple[str, str]], rows: list[dict],
           fail_key: str | None = None, unit_key: str | None = None) -> str:
    """columns: (key, header). Numbers right-aligned with the row's unit."""
    if not rows:
        return f'<p class="none" id="{table_id}">None.</p>'
    head = ''.join(f'<th>{escape(h)}</th>' for _, h in columns)
    body = []
    for row in rows:
        failed = fail_key and row.get(fail_key) == 'fail'
        unit = row.get(unit_key) if unit_key else None
        cells = []
        for key, _ in columns:
            value = row.get(key)
            text = escape(human(value, key, unit))
            css = ' class="num"' if isinstance(value, (int, float)) and \
                not isinstance(value, bool) else ''
            if key == fail_key and value:
                text = f'<span class="verdict-{escape(value)}">{text}</span>'
            cells.append(f'<td{css}>{text}</td>')
        cls = ' class="fail"' if failed else ''
        body.append(f'<tr{cls}>{"".join(cells)}</tr>')
    return (f'<table id="{table_id}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _caption(series: Series) -> str:
    latest = series.latest
    unit = series.unit
    parts = [f'<b>{escape(series.title)}</b>: latest median '
             f'{escape(human(latest["median_value"], "median_value", unit))} '
             f'on {latest["day"]:%Y-%m-%d}']
    reference = series.first_known('reference')
    if reference:
        parts.append(_share_of(series, 'reference', reference))
    else:
        parts.append('no published reference: shown without a verdict')
    peak = series.first_known('peak')
    if peak:
        parts.append(_share_of(series, 'peak', peak))
    failed = sum(d.get('failed_runs') or 0 for d in series.days)
    if failed:
        parts.append(f'<span class="verdict-fail">{failed} failed run(s), '
                     'marked in red</span>')
    return '; '.join(parts) + '.'


def _share_of(series: Series, kind: str, value: float) -> str:
    """'reference 700,000 MB/s (its source), 100.9% of it'."""
    source = series.first_known(f'{kind}_source')
    return (f'{kind} {escape(human(value, kind, series.unit))}'
            + (f' ({escape(source)})' if source else '')
            + f', {series.latest["median_value"] / value:.1%} of it')


def _figure(series: Series) -> str:
    data = escape(f'{series.cluster}|{series.vm_sku}|{series.test}|'
                  f'{series.metric}|{series.device}')
    return (f'<figure class="trend" data-series="{data}">'
            f'{trend_chart(series.days, series.unit)}'
            f'<figcaption>{_caption(series)}</figcaption></figure>')


def _grid(grid: Grid) -> str:
    """Nodes x checks, coloured by acceptance's verdict; every cell that is
    not good links to its evidence."""
    data = escape(grid.partition)
    head = ''.join(f'<th>{escape(check)}</th>' for check in grid.checks)
    body = []
    for node, verdict in grid.nodes.items():
        cells = [f'<th class="node v-{escape(verdict)}" '
                 f'data-verdict="{escape(verdict)}">{escape(node)}<br>'
                 f'{escape(verdicts.words(verdict))}</th>']
        for check in grid.checks:
            cell = grid.cells.get((node, check))
            if cell is None:
                cells.append('<td class="cell none">-</td>')
                continue
            text = escape(verdicts.words(cell))
            evidence = grid.evidence.get((node, check))
            if evidence is not None:
                text = f'<a href="#{escape(evidence.anchor)}">{text}</a>'
            cells.append(f'<td class="cell v-{escape(cell)}" '
                         f'data-verdict="{escape(cell)}" '
                         f'data-check="{escape(check)}">{text}</td>')
        body.append(f'<tr data-node="{escape(node)}">{"".join(cells)}</tr>')
    counts = ', '.join(f'{n} {verdicts.words(v)}'
                       for v, n in grid.counts().items())
    run = (f'acceptance session {escape(grid.session)}, '
           if grid.session else '')
    return (f'<section class="verdicts" data-partition="{data}">'
            f'<h3>{data}</h3><p class="meta">{len(grid.nodes)} node(s): '
            f'{escape(counts)}. From {run}{escape(grid.source)}, '
            f'{escape(grid.finished)}.</p>'
            f'<table class="grid" id="grid-{escape(verdicts.anchor(grid.partition, "", ""))}">'
            f'<thead><tr><th>node</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></section>')


LEGEND = ''.join(f'<span class="v-{v}">{verdicts.words(v)}</span>'
                 for v in verdicts.VERDICTS)


def _evidence(grids: list[Grid]) -> str:
    rows = []
    for grid in grids:
        for (node, check), found in grid.evidence.items():
            lines = '<br>'.join(escape(line) for line in found.lines) or '-'
            rows.append(f'<tr id="{escape(found.anchor)}" '
                        f'data-verdict="{escape(found.verdict)}">'
                        f'<td>{escape(grid.partition)}</td>'
                        f'<td>{escape(node)}</td><td>{escape(check)}</td>'
                        f'<td class="v-{escape(found.verdict)}">'
                        f'{escape(verdicts.words(found.verdict))}</td>'
                        f'<td>{lines}</td></tr>')
    if not rows:
        return '<p class="none" id="evidence">Nothing but good cells.</p>'
    return ('<table id="evidence"><thead><tr><th>partition</th><th>node</th>'
            '<th>check</th><th>verdict</th><th>evidence</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def render(report: Report) -> str:
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           '<title>clusterproof report</title>',
           f'<style>{CSS}</style></head><body>',
           '<h1>clusterproof report</h1>',
           f'<p class="meta">From {escape(report.source)}, generated '
           f'{report.generated:%Y-%m-%d %H:%M} UTC. Each number carries its '
           'unit; references and peaks name their source.</p>']
    out.append('<h2 id="verdicts">Acceptance verdicts</h2>')
    if report.grids:
        out.append(f'<p class="legend">{LEGEND}</p>')
        out.extend(_grid(grid) for grid in report.grids)
    else:
        out.append('<p class="none" id="no-verdicts">No node judged yet: '
                   'run <code>clusterproof acceptance</code>.</p>')
    out.append('<h2 id="evidence-of-verdicts">Evidence</h2>')
    out.append(_evidence(report.grids))
    out.append('<h2 id="bad">Bad nodes</h2>')
    out.append(_table('bad-nodes', [
        ('cluster', 'cluster'), ('partition', 'partition'), ('node', 'node'),
        ('why', 'why'), ('detail', 'detail'),
        ('what_changed', 'what changed'), ('when', 'when'),
        ('earlier', 'earlier runs with it')], report.bad_nodes))
    if report.bad_nodes:
        out.append('<p class="meta">Each finding once, at its latest run. '
                   'Every run of every node: <code>clusterproof query '
                   'node_outliers --all</code> and <code>clusterproof query '
                   'failures</code>.</p>')
    out.append('<h2 id="regress">Regressions</h2>')
    out.append(_table('regressions', [
        ('cluster', 'cluster'), ('vm_sku', 'VM SKU'),
        ('check_name', 'test'), ('check_perf_var', 'metric'),
        ('check_perf_value', 'latest'), ('baseline_value', 'baseline'),
        ('change', 'change'), ('check_perf_ref', 'reference'),
        ('reason', 'reason'), ('what_changed', 'what changed'),
        ('completed', 'when')],
        report.regressions, unit_key='check_perf_unit'))
    out.append('<h2 id="runs">Runs</h2>')
    out.append(_table('runs', [
        ('started', 'started'), ('cluster', 'cluster'),
        ('session_id', 'session'), ('tests_run', 'tests'),
        ('tests_passed', 'passed'), ('tests_failed', 'failed'),
        ('not_measured', 'not measured'), ('nodes_covered', 'nodes'),
        ('slowest_metric', 'furthest below reference'),
        ('slowest_pct_of_reference', '% of reference')], report.runs))
    out.append('<h2 id="latest">Latest verdict per check and node</h2>')
    out.append(_table('latest-verdicts', [
        ('cluster', 'cluster'), ('check_partition', 'partition'),
        ('node', 'node'), ('check_name', 'check'),
        ('check_result', 'verdict'), ('check_fail_reason', 'reason'),
        ('completed', 'when')], report.latest_by_node,
        fail_key='check_result'))
    out.append('<h2 id="trends">Trends</h2>')
    groups = report.groups()
    if not groups:
        out.append('<p class="none">No measured values yet.</p>')
    for (cluster, vm_sku), series in groups.items():
        out.append(f'<section class="cluster" data-cluster="{escape(cluster)}"'
                   f' data-sku="{escape(vm_sku)}"><h3>{escape(cluster)} · '
                   f'{escape(vm_sku or "unknown SKU")}</h3>'
                   '<div class="charts">')
        out.extend(_figure(s) for s in series)
        out.append('</div></section>')
    out.append('</body></html>\n')
    return ''.join(out)
