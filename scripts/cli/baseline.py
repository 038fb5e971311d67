"""`clusterproof baseline`: the site's own references, from its passing
runs (scripts/comparison/baseline.py)."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from scripts.cli.query import add_selection_arguments, filters_of, workspace_of
from scripts.comparison import baseline
from scripts.query.result import QueryFailed
from scripts.query.runner import Runner

EXIT_USAGE = 2
DEFAULT_SINCE = '30d'


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'baseline', help='build site baselines from passing runs',
        description='Build the site\'s own references from the passing runs '
                    'in the local store (or Log Analytics with --workspace) '
                    f'over a window (--since, default {DEFAULT_SINCE}): per '
                    'cluster, test, reference key (metric, SKU or '
                    'system:partition, method, node count) and device, the '
                    'median after iterative outlier removal, with two-sided '
                    'bounds (+-max(10%, 3.5 robust standard deviations)) and '
                    'its source. Writes <family>.yaml files into --out; '
                    f'point {baseline.SETTING} at that directory and every '
                    'ReFrame run (acceptance too) judges its rows against it '
                    'beside the published references (both are checked). '
                    'A value that moved since '
                    'the baseline already in --out is shown old -> new.')
    add_selection_arguments(parser)
    parser.add_argument('--out', type=Path, metavar='DIR',
                        help='directory for the <family>.yaml files')
    parser.add_argument('--dry-run', action='store_true',
                        help='show the table, write nothing')
    parser.add_argument('--min-runs', type=int,
                        default=baseline.DEFAULT_MIN_RUNS, metavar='N',
                        help='refuse entries with fewer runs (sessions) than '
                             f'N (default {baseline.DEFAULT_MIN_RUNS})')
    parser.set_defaults(func=run)


def _moved(entry: baseline.Entry) -> str:
    if entry.previous is None:
        return 'new'
    if entry.previous == entry.value:
        return 'unchanged'
    change = 100 * (entry.value - entry.previous) / abs(entry.previous) \
        if entry.previous else 0.0
    return f'{entry.previous:.6g} -> {entry.value:.6g} ({change:+.1f}%)'


def table(entries: list[baseline.Entry]) -> list[str]:
    header = ('cluster', 'test', 'key', 'device', 'value', 'bounds', 'runs',
              'nodes', 'status')
    rows = []
    for e in entries:
        low, high = e.bounds()
        rows.append((e.cluster, e.test, e.key, e.device or '-',
                     f'{e.value:.6g} {e.unit}'.strip(),
                     f'{low:.6g}..{high:.6g}', str(e.runs), str(e.nodes),
                     f'refused: {e.refused}' if e.refused else _moved(e)))
    widths = [max(len(r[i]) for r in rows + [header])
              for i in range(len(header))]
    return ['  '.join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
            for row in [header] + rows]


def run(args) -> int:
    if not args.dry_run and args.out is None:
        print('baseline: --out DIR is needed (or --dry-run)', file=sys.stderr)
        return EXIT_USAGE
    if args.min_runs < 1:
        print('baseline: --min-runs must be 1 or more', file=sys.stderr)
        return EXIT_USAGE
    if args.since is None:
        from scripts.cli.query import since_time
        args.since = since_time(DEFAULT_SINCE)
    runner = Runner(workspace_of(args), filters_of(args))
    try:
        rows = runner.run('results').records()
    except QueryFailed as error:
        print(f'baseline: {error}', file=sys.stderr)
        return 1
    command = 'clusterproof baseline ' + shlex.join(sys.argv[2:]) \
        if sys.argv[1:2] == ['baseline'] else 'clusterproof baseline'
    previous = baseline.read([args.out]) if args.out and args.out.is_dir() \
        else {}
    entries = baseline.build(rows, command, args.min_runs,
                             previous=previous)
    if not entries:
        print(f'baseline: no passing measurement in {runner.where} since '
              f'{args.since:%Y-%m-%d %H:%M}Z', file=sys.stderr)
        return 1
    for line in table(entries):
        print(line)
    kept = [e for e in entries if not e.refused]
    if args.dry_run:
        print(f'{len(kept)} of {len(entries)} entries would be written '
              '(--dry-run)')
        return 0
    written = baseline.write(kept, args.out)
    print(f'{len(kept)} of {len(entries)} entries written: '
          + ', '.join(str(p) for p in written))
    print(f'judge against them: export {baseline.SETTING}={args.out}')
    return 0
