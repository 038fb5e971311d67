"""The report's first screen: acceptance's verdicts as a grid of nodes and
checks, each cell coloured by its verdict, each bad one linked to its
evidence.

The verdicts are acceptance's own: read from the summary each acceptance
run writes ($CLUSTERPROOF_HOME/acceptance/<session>/summary.json), the
latest run of each partition. Where no summary is at hand (a report from
Log Analytics on another machine) the grid is read from the latest verdict
rows instead, with the same words: a failure is bad, a tool missing on the
node is not measured, never bad.

Pure functions: a summary document (or rows) in, a Grid out."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

#: Worst first, as acceptance orders them (scripts/acceptance/findings.py).
VERDICTS = ('bad', 'suspect', 'flaky', 'not_judged', 'not_measured',
            'powered_down', 'good')
FAIL, PASSED_AGAIN = 'fail', 'passed when measured again'
#: Findings about a node as a whole, not one check: every cell says it.
WHOLE_NODE_CHECKS = ('(all checks)', '(powered down)')
#: A value this many times its reference, or this many times below it, is
#: not a measurement of a node that is slow or fast: a unit mix-up, a
#: parse of the wrong line, a run that hung. A choice of this project: the
#: largest loss a real fault gives in the issue's fleet data (a PCIe link at
#: half width, one CPU of ten) stays well inside it.
IMPLAUSIBLE_RATIO = 10.0
# A tool missing on the node (checks/common/tools.py's guard) as a stored
# row's reason says it: acceptance counts it not measured.
_TOOL_MISSING = re.compile(r' not found on node |^tool missing: ')


def words(verdict: str) -> str:
    return verdict.replace('_', ' ')


def implausible(value, reference) -> bool:
    """Whether *value* is beyond any plausible deviation from *reference*."""
    try:
        value, reference = float(value), float(reference)
    except (TypeError, ValueError):
        return False
    if value <= 0 or reference <= 0:
        return False
    ratio = value / reference
    return ratio >= IMPLAUSIBLE_RATIO or ratio <= 1 / IMPLAUSIBLE_RATIO


def tool_missing(reason: str | None) -> bool:
    return bool(_TOOL_MISSING.search(reason or ''))


@dataclass
class Evidence:
    """What made one cell's verdict: the findings, as acceptance said them."""
    anchor: str
    node: str
    check: str
    verdict: str
    lines: list[str]


@dataclass
class Grid:
    """One partition's nodes x checks, from one acceptance run."""
    partition: str
    session: str
    finished: str
    checks: list[str]
    #: node -> its verdict (acceptance's)
    nodes: dict[str, str]
    #: (node, check) -> the cell's verdict
    cells: dict[tuple[str, str], str]
    evidence: dict[tuple[str, str], Evidence] = field(default_factory=dict)
    source: str = 'acceptance summary'

    def counts(self) -> dict[str, int]:
        found = {v: 0 for v in VERDICTS}
        for verdict in self.nodes.values():
            found[verdict] = found.get(verdict, 0) + 1
        return found


def anchor(partition: str, node: str, check: str) -> str:
    text = f'evidence-{partition}-{node}-{check}'
    return re.sub(r'[^A-Za-z0-9_-]+', '-', text).strip('-')


def _finding_line(f: dict) -> str:
    """'triad_bw 10382.9 MB/s against 12369.6 MB/s: peers: 16.1% below …
    (confirmed: fail)'; a value beyond plausible says so."""
    unit = f" {f['unit']}" if f.get('unit') else ''
    parts = []
    if f.get('metric'):
        parts.append(f['metric'])
    if f.get('value') is not None:
        parts.append(f"{f['value']:g}{unit}")
    if f.get('reference') is not None:
        parts.append(f"against {f['reference']:g}{unit}")
    head = ' '.join(parts)
    reason = ' '.join(str(f.get('reason') or '').split())
    basis = {'peers': 'peers: ', 'site_baseline': 'site baseline: '}.get(
        f.get('basis'), '') if f.get('verdict') == FAIL else ''
    if f.get('verdict') == FAIL and implausible(f.get('value'),
                                                f.get('reference')):
        reason = ('implausible value (more than '
                  f'{IMPLAUSIBLE_RATIO:g}x from what it is held against: '
                  'a unit, a parse or a hung run, not a node this slow)')
    if f.get('partner'):
        head += f" (with {f['partner']})"
    line = f'{head}: {basis}{reason}' if head else f'{basis}{reason}'
    if f.get('confirmations'):
        line += f" (measured again: {', '.join(map(str, f['confirmations']))})"
    return line.strip(': ')


def _cell(findings: list[dict], node_verdict: str) -> tuple[str, list[dict]]:
    """One node's verdict on one check, and the findings that made it."""
    failing = [f for f in findings if f.get('verdict') == FAIL
               and not f.get('set_aside') and not f.get('blamed_on_partner')]
    if failing and node_verdict in ('bad', 'suspect'):
        return node_verdict, failing
    flaky = [f for f in findings if f.get('verdict') == FAIL
             and f.get('set_aside') == PASSED_AGAIN]
    if flaky:
        return 'flaky', flaky
    for verdict in ('not_judged', 'not_measured', 'powered_down'):
        found = [f for f in findings if f.get('verdict') == verdict]
        if found:
            return verdict, found
    return 'good', []


def grid_of_summary(document: dict, partition: str) -> Grid:
    """The grid of one partition from one acceptance summary."""
    nodes = [n for n in document.get('nodes', [])
             if n.get('partition') == partition]
    checks = sorted({f['check'] for n in nodes for f in n['findings']
                     if f.get('check') not in WHOLE_NODE_CHECKS})
    grid = Grid(partition, str(document.get('session_id')),
                str(document.get('finished')), checks,
                {n['node']: n['verdict'] for n in nodes}, {})
    for n in sorted(nodes, key=lambda n: (VERDICTS.index(n['verdict'])
                                          if n['verdict'] in VERDICTS
                                          else len(VERDICTS), n['node'])):
        whole = [f for f in n['findings']
                 if f.get('check') in WHOLE_NODE_CHECKS]
        for check in checks:
            found = whole + [f for f in n['findings']
                             if f.get('check') == check]
            verdict, why = _cell(found, n['verdict'])
            grid.cells[(n['node'], check)] = verdict
            if verdict != 'good':
                grid.evidence[(n['node'], check)] = Evidence(
                    anchor(partition, n['node'], check), n['node'], check,
                    verdict, [_finding_line(f) for f in why])
    grid.nodes = {n['node']: n['verdict'] for n in sorted(
        nodes, key=lambda n: (VERDICTS.index(n['verdict'])
                              if n['verdict'] in VERDICTS else len(VERDICTS),
                              n['node']))}
    return grid


def read_summaries(home: Path) -> list[dict]:
    """Every acceptance summary under *home*, oldest first (unreadable
    ones left out)."""
    found = []
    for path in sorted((home / 'acceptance').glob('*/summary.json')):
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and document.get('nodes'):
            found.append(document)
    return sorted(found, key=lambda d: str(d.get('finished') or ''))


def judged_records(documents: list[dict]) -> set[str]:
    """The stored rows acceptance judged (its findings' record_ids)."""
    return {f['record_id'] for document in documents
            for n in document.get('nodes', []) for f in n['findings']
            if f.get('record_id')}


def grids_of_summaries(documents: list[dict]) -> list[Grid]:
    """Each partition's grid from the latest acceptance run that judged
    it."""
    latest: dict[str, dict] = {}
    for document in documents:   # oldest first: the latest wins
        for partition in {n.get('partition') for n in document['nodes']}:
            latest[partition] = document
    return [grid_of_summary(document, partition)
            for partition, document in sorted(latest.items())]


def grids_of_rows(latest_by_node: list[dict]) -> list[Grid]:
    """Where no acceptance summary is at hand: each partition's grid from
    the latest verdict of every check on every node (latest_by_node), in
    acceptance's words: a failure is bad, a tool missing or a not-measured
    row is not measured, the rest good."""
    by_partition: dict[str, list[dict]] = {}
    for row in latest_by_node:
        if row.get('node') in (None, '', '(no node)'):
            continue
        partition = f"{row.get('check_system')}:{row.get('check_partition')}"
        by_partition.setdefault(partition, []).append(row)
    grids = []
    for partition, rows in sorted(by_partition.items()):
        checks = sorted({r['check_name'] for r in rows if r.get('check_name')})
        grid = Grid(partition, '', max(str(r.get('completed') or '')
                                       for r in rows), checks, {}, {},
                    source='latest verdict rows')
        for r in rows:
            result = r.get('check_result')
            reason = r.get('check_fail_reason') or ''
            if result == FAIL and not tool_missing(reason):
                verdict = 'bad'
            elif result == FAIL or result == 'not_measured':
                verdict = 'not_measured'
            else:
                verdict = 'good'
            key = (r['node'], r['check_name'])
            grid.cells[key] = verdict
            if verdict != 'good':
                basis = r.get('verdict_basis')
                grid.evidence[key] = Evidence(
                    anchor(partition, *key), r['node'], r['check_name'],
                    verdict, [(f'{basis}: ' if basis else '') + reason])
        for node in {n for n, _ in grid.cells}:
            mine = [v for (n, _), v in grid.cells.items() if n == node]
            grid.nodes[node] = min(mine, key=VERDICTS.index)
        grid.nodes = dict(sorted(grid.nodes.items(), key=lambda item: (
            VERDICTS.index(item[1]), item[0])))
        grids.append(grid)
    return grids
