"""`clusterproof report --out FILE.html`: one self-contained HTML page of
trends, bad nodes, regressions and the latest verdict per node."""
from __future__ import annotations

import sys
from pathlib import Path

from scripts.cli.query import add_selection_arguments, filters_of, workspace_of
from config.results.store import files as store
from scripts.query.result import QueryFailed
from scripts.query.runner import Runner
from scripts.report import model, page


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'report', help='write a self-contained HTML report',
        description='Write one HTML file (no network needed to open it): per '
                    'partition acceptance\'s verdicts first, a grid of nodes '
                    'and checks coloured by verdict (from the acceptance '
                    'summaries in $CLUSTERPROOF_HOME, else the latest verdict '
                    'rows), each bad cell linked to its evidence; per '
                    'cluster and VM SKU a trend chart of each metric with its '
                    'reference band and failed days marked; bad nodes and '
                    'regressions first; the latest verdict per check and '
                    'node. From the local store, or Log Analytics with '
                    '--workspace (or LOGS_WORKSPACE_ID).')
    parser.add_argument('--out', required=True, type=Path,
                        metavar='FILE.html')
    add_selection_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    runner = Runner(workspace_of(args), filters_of(args))
    try:
        report = model.gather(runner, store.home())
    except QueryFailed as err:
        print(f'clusterproof report: {runner.where}: {err}', file=sys.stderr)
        return 1
    for note in runner.notes():
        print(f'clusterproof report: note: {note}', file=sys.stderr)
    try:
        args.out.write_text(page.render(report))
    except OSError as err:
        print(f'clusterproof report: cannot write {args.out}: '
              f'{err.strerror}', file=sys.stderr)
        return 1
    nodes = sum(len(grid.nodes) for grid in report.grids)
    print(f'wrote {args.out}: acceptance verdicts of {nodes} node(s), '
          f'{len(report.series)} trend chart(s), '
          f'{len(report.bad_nodes)} bad node finding(s), '
          f'{len(report.regressions)} regression(s), from {runner.where}')
    return 0
