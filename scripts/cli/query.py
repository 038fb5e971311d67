"""`clusterproof query NAME|FILE.kql`: run a shipped KQL query (or a file of
yours) against the local store, or Log Analytics with --workspace."""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys

from scripts.query import empty, library, output
from scripts.query.result import QueryFailed
from scripts.query.runner import Runner

EXIT_USAGE = 2
OUTLIERS = 'node_outliers'     # outliers only, unless --all
_RELATIVE = re.compile(r'^(\d+)([dh])$')


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'query', help='run a shipped KQL query or a .kql file',
        description='Run a KQL query from bicep/queries (by name) or a .kql '
                    'file. Locally (the default) DuckDB reads the store under '
                    '$CLUSTERPROOF_HOME/results; with --workspace (or '
                    'LOGS_WORKSPACE_ID) the same text runs in Log Analytics '
                    'with DefaultAzureCredential. Queries read '
                    'clusterproof_results: the table with each record once.')
    parser.add_argument('query', nargs='?', metavar='NAME|FILE.kql',
                        help='a shipped query (see --list) or a .kql file')
    parser.add_argument('--list', action='store_true',
                        help='list the shipped queries and exit')
    add_selection_arguments(parser)
    parser.add_argument('--saved-function', action='store_true',
                        help='in Log Analytics, call the deployed function '
                             'clusterproof_NAME instead of sending the '
                             "file's text (no --since/--cluster/--partition)")
    parser.add_argument('--all', action='store_true',
                        help='node_outliers: every node of every run, not '
                             'only the outliers')
    form = parser.add_mutually_exclusive_group()
    form.add_argument('--json', action='store_true',
                      help='a JSON array of rows')
    form.add_argument('--csv', action='store_true', help='CSV with a header')
    parser.set_defaults(func=run)


def add_selection_arguments(parser):
    """Where the rows come from and which: shared with `report`."""
    parser.add_argument('--workspace', default=None,
                        help='Log Analytics workspace id (default: '
                             'LOGS_WORKSPACE_ID; --local ignores it)')
    parser.add_argument('--local', action='store_true',
                        help='read the local store even if '
                             'LOGS_WORKSPACE_ID is set')
    parser.add_argument('--since', type=since_time, default=None,
                        metavar='7d|12h|YYYY-MM-DD',
                        help='only rows completed since then')
    parser.add_argument('--cluster', help='only this cluster')
    parser.add_argument('--partition', help='only this partition')


def filters_of(args) -> library.Filters:
    return library.Filters(args.since, args.cluster, args.partition)


EARLIEST_SINCE = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def since_time(text: str) -> dt.datetime:
    """A time from 1970 to now (a usage error, exit 2, otherwise)."""
    now = dt.datetime.now(dt.timezone.utc)
    relative = _RELATIVE.match(text)
    try:
        if relative:
            amount, unit = int(relative.group(1)), relative.group(2)
            stamp = now - dt.timedelta(**{'days' if unit == 'd' else 'hours':
                                          amount})
        else:
            stamp = dt.datetime.fromisoformat(text)
    except (ValueError, OverflowError):
        stamp = None
    if stamp is not None and stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.timezone.utc)
    if stamp is None or not EARLIEST_SINCE <= stamp <= now:
        raise argparse.ArgumentTypeError(
            f'{text!r} is not a time from 1970 to now (7d, 12h or '
            f'YYYY-MM-DD)')
    return stamp


since_time.__name__ = 'time (7d, 12h or YYYY-MM-DD)'


def workspace_of(args) -> str | None:
    if args.local:
        return None
    return args.workspace or os.environ.get('LOGS_WORKSPACE_ID') or None


def list_queries() -> str:
    queries = [q for name, q in library.shipped().items()]
    width = max(len(q.name) for q in queries)
    return ''.join(f'{q.name.ljust(width)}  {q.description}\n'
                   for q in queries)


def saved_function_problem(args, runner) -> str | None:
    if not runner.workspace:
        return 'needs a workspace (--workspace or LOGS_WORKSPACE_ID)'
    if args.query not in library.shipped():
        return f'needs a shipped query name, not {args.query!r}'
    if args.since or args.cluster or args.partition:
        return ('cannot take --since, --cluster or --partition: the '
                'function carries its own base')
    return None


def run(args) -> int:
    if args.list:
        sys.stdout.write(list_queries())
        return 0
    if not args.query:
        print('clusterproof query: name a query or a .kql file '
              '(--list shows the shipped ones)', file=sys.stderr)
        return EXIT_USAGE
    if args.all and args.query != OUTLIERS:
        print(f'clusterproof query: --all is for {OUTLIERS} only',
              file=sys.stderr)
        return EXIT_USAGE
    runner = Runner(workspace_of(args), filters_of(args))
    label = args.query
    if args.query == OUTLIERS and not args.all and not args.saved_function:
        args.query = library.outliers_only()
    if args.saved_function:
        problem = saved_function_problem(args, runner)
        if problem:
            print(f'clusterproof query: --saved-function {problem}',
                  file=sys.stderr)
            return EXIT_USAGE
        args.query = library.saved_function_call(args.query)
    writer = (output.write_json if args.json else
              output.write_csv if args.csv else output.write_table)
    try:
        # rows are never all held in Python (node_outliers --all at a
        # million rows: a table or CSV is made by DuckDB, JSON written as
        # the rows are read); the notes, which ask the connection nothing,
        # before them
        runner.read(args.query)
        for note in runner.notes():
            print(f'clusterproof query: note: {note}', file=sys.stderr)
        rows = runner.write(args.query, writer, sys.stdout)
        if not rows and not args.saved_function:
            why = empty.reason(runner, _query(args.query))
            if why:
                print(f'clusterproof query: no rows: {why}', file=sys.stderr)
    except library.QueryError as err:
        print(f'clusterproof query: {err}', file=sys.stderr)
        return EXIT_USAGE
    except QueryFailed as err:
        print(f'clusterproof query: {label} on {runner.where}: {err}',
              file=sys.stderr)
        return 1
    return 0


def _query(name_or_query) -> library.Query:
    return (name_or_query if isinstance(name_or_query, library.Query)
            else library.resolve(name_or_query))
