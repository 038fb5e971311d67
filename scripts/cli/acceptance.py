"""`clusterproof acceptance`: the scheduled run that names bad nodes."""
from __future__ import annotations

import argparse
import sys

from scripts.acceptance import plan, power_up, session

DEFAULT_TAG = 'acceptance'


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'acceptance', help='run the suite on every node and name bad nodes',
        description='Run the acceptance checks of the current system (ReFrame '
                    'picks it by host name, or --system): single-node checks '
                    'on every node, two-node network checks on node pairs '
                    '(each node with two partners), the others once per '
                    'partition. Prints every bad or not-measured node with '
                    'the check, the value and the reference, writes '
                    '$CLUSTERPROOF_HOME/acceptance/<session>/summary.json, '
                    'stores not-measured findings as rows, and runs `sync` '
                    'when Azure is configured. Exit 0: every node good; 1: '
                    'some node bad, suspect or not measured; 2: the run '
                    'itself broke (scheduler down, configuration error) or '
                    'bad usage. Arguments after `--` go to ReFrame as they '
                    'are (e.g. -- -S array_size=100000000); select with '
                    '--tag and --exclude, not ReFrame\'s -n (it would widen '
                    'every scope\'s selection).')
    parser.add_argument('--system', help='ReFrame system (default: by host '
                                         'name, or RFM_SYSTEM)')
    parser.add_argument('--partition', action='append', default=[],
                        metavar='NAME', help='ReFrame partition to accept '
                        '(repeatable; default: all of the system)')
    parser.add_argument('--tag', action='append', default=[], metavar='TAG',
                        help=f'run checks with this tag (repeatable; '
                             f'default: {DEFAULT_TAG})')
    parser.add_argument('--exclude', action='append', default=[],
                        metavar='PATTERN',
                        help='leave out checks whose name matches (ReFrame '
                             '-x; repeatable)')
    parser.add_argument('--checks', action='append', default=[],
                        metavar='PATH', help='check files or directories '
                        f'(default: {session.REPO / "checks"})')
    parser.add_argument('--retry-failed', type=int, default=0, metavar='N',
                        help='re-measure a failing check up to N times '
                             'before judging its node')
    parser.add_argument('--drain', action='store_true',
                        help='put bad nodes in Slurm DRAIN with a reason '
                             'naming the check, value and reference')
    parser.add_argument('--dry-run', action='store_true',
                        help='with --drain: print the scontrol commands '
                             'instead of running them')
    parser.add_argument('--max-drain', type=int, default=None, metavar='N',
                        help='drain nothing when more than N nodes are bad '
                             '(default: 10%% of the nodes, at least 1)')
    parser.add_argument('--max-pending', default='2h', metavar='TIME',
                        help="give up a job still pending after TIME (ReFrame "
                             "duration, e.g. 30m, 4h; default 2h): its nodes "
                             "are reported not measured; 'none' waits forever")
    parser.add_argument('--power-up', action='store_true',
                        help='let Slurm start powered-down (idle~) nodes '
                             'for the run; what it costs is printed first '
                             '(default: they are reported powered down, '
                             'not measured)')
    parser.add_argument('--max-power-up', type=int,
                        default=power_up.DEFAULT_MAX, metavar='N',
                        help='with --power-up: start at most N nodes '
                             f'(default {power_up.DEFAULT_MAX})')
    parser.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_ARGS',
                        help=argparse.SUPPRESS)
    parser.set_defaults(func=run)
    return parser


def run(args) -> int:
    if args.retry_failed < 0 or (args.max_drain is not None
                                 and args.max_drain < 0):
        print('acceptance: --retry-failed and --max-drain must be 0 or more',
              file=sys.stderr)
        return session.EXIT_BROKEN
    if args.max_power_up < 0:
        print('acceptance: --max-power-up must be 0 or more', file=sys.stderr)
        return session.EXIT_BROKEN
    if args.dry_run and not args.drain:
        print('acceptance: --dry-run only makes sense with --drain',
              file=sys.stderr)
        return session.EXIT_BROKEN
    selection = plan.Selection(
        checks=args.checks or [str(session.REPO / 'checks')],
        tags=args.tag or [DEFAULT_TAG], excludes=args.exclude,
        extra=args.reframe_args,
        max_pending=None if args.max_pending == 'none' else args.max_pending)
    options = session.Options(
        selection=selection, system=args.system, partitions=args.partition,
        retries=args.retry_failed, drain=args.drain, dry_run=args.dry_run,
        max_drain=args.max_drain, power_up=args.power_up,
        max_power_up=args.max_power_up)
    try:
        return session.run(options, say=lambda line: print(line, flush=True))
    except ValueError as error:
        print(f'acceptance: {error}', file=sys.stderr)
        return session.EXIT_BROKEN

