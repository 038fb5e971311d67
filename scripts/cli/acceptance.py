"""`clusterproof acceptance`: the scheduled run that names bad nodes."""
from __future__ import annotations

import argparse
import sys

from scripts.acceptance import plan, power_up, session
from scripts.cli import repo
from scripts.comparison import baseline, peers

DEFAULT_TAG = 'acceptance'
DEFAULT_MAX_PENDING = '2h'


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
                    'when Azure is configured. A node flagged on any basis '
                    'is measured again alone first (--confirm 1): bad only '
                    'when it fails again, else flaky. Exit 0: every node '
                    'good, flaky or not judged; 1: '
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
                        help='re-run a failing test case up to N times inside '
                             'the session (ReFrame --max-retries), before '
                             'any verdict: a whole batch job again, beside '
                             'the same nodes, and blind to peer failures. '
                             'Beside --confirm it only makes a failure '
                             'survive more runs first; it never makes a '
                             'node flaky, and never confirms one')
    parser.add_argument('--confirm', type=int, default=1, metavar='N',
                        help='run the checks a bad node failed (on any '
                             'basis: published, site baseline, peers) again, '
                             'one job per node (alone, not beside the batch), '
                             'up to N times (default 1): the node is bad only '
                             'if it fails every attempt; a failure that does '
                             'not repeat is flaky (shown, never drained or '
                             'reported). The node-time it costs is printed. '
                             '0: no re-measurement, and then --drain and '
                             '--report-to-azure act on no node')
    parser.add_argument('--no-repair', action='store_true',
                        help='do not re-run a suspect pair (a pair check '
                             'failed with one partner only) with a good '
                             'partner for each node')
    parser.add_argument('--resume', action='store_true',
                        help='test only the nodes clusterproof drained '
                             '(reason "clusterproof acceptance: ..."), inside '
                             'a Slurm maintenance reservation made for them: '
                             'resume those that pass, drain the others again '
                             'with an updated reason; other drains (admins, '
                             'the CycleCloud health agent) are never touched')
    parser.add_argument('--drain', action='store_true',
                        help='put confirmed bad nodes (failed again when '
                             'measured again: --confirm) in Slurm DRAIN with '
                             'a reason naming the check, value and '
                             'reference; never a flaky, not-judged or '
                             'unconfirmed node')
    parser.add_argument('--dry-run', action='store_true',
                        help='with --drain: print the scontrol commands '
                             'instead of running them; with '
                             '--report-to-azure: print each report\'s URL '
                             'and body and send nothing')
    parser.add_argument('--max-drain', type=int, default=None, metavar='N',
                        help='drain nothing when more than N nodes are bad '
                             '(default: 10%% of the nodes, at least 1)')
    parser.add_argument('--report-to-azure', action='store_true',
                        help='file one Azure Guest Health Report per '
                             'confirmed bad node (failed every '
                             're-measurement: --confirm N), with the '
                             'category its finding maps to; kept in '
                             '$CLUSTERPROOF_HOME/azure_reports and as rows; '
                             'follow up with `clusterproof azure-reports '
                             '--follow-up` (scripts/guest_health/README.md)')
    parser.add_argument('--max-reports', type=int, default=None, metavar='N',
                        help='report nothing when more than N nodes are to '
                             'be reported (default: 10%% of the nodes, at '
                             'least 1)')
    parser.add_argument('--max-pending', default=DEFAULT_MAX_PENDING,
                        metavar='TIME',
                        help="give up a job still pending after TIME (ReFrame "
                             "duration, e.g. 30m, 4h; default 2h): its nodes "
                             "are reported not measured; 'none' waits forever")
    parser.add_argument('--peer-tolerance', action='append', default=[],
                        metavar='[TEST=]PCT',
                        help='a node fails against its peers when worse '
                             'than their median by more than PCT%% (and '
                             'beyond --peer-z); TEST= sets it for one test '
                             f'class (default {100 * peers.DEFAULT_TOLERANCE:g})')
    parser.add_argument('--peer-z', action='append', default=[],
                        metavar='[TEST=]Z',
                        help='a flagged node is bad when its re-run\'s '
                             'robust z-score is beyond Z too (default '
                             f'{peers.DEFAULT_Z_LIMIT:g}; the flag\'s own '
                             'limit grows with the node\'s judged values: '
                             'scripts/comparison/README.md)')
    parser.add_argument('--min-peers', type=int,
                        default=peers.DEFAULT_MIN_PEERS, metavar='N',
                        help='judge a node against its peers only where at '
                             'least N other nodes measured the same (the '
                             'node itself not counted; default '
                             f'{peers.DEFAULT_MIN_PEERS})')
    parser.add_argument('--power-up', action='store_true',
                        help='let Slurm start powered-down (idle~) nodes '
                             'for the run; what it costs is printed first '
                             '(default: they are reported powered down, '
                             'not measured)')
    parser.add_argument('--max-power-up', type=int,
                        default=power_up.DEFAULT_MAX, metavar='N',
                        help='with --power-up: start at most N nodes '
                             f'(default {power_up.DEFAULT_MAX})')
    parser.add_argument('--node-batch', type=int, default=plan.NODE_BATCH,
                        metavar='N',
                        help='single-node checks that can run on each node '
                             'of one job (STREAM, HPL, HPCG, HPCC, NCCL) run '
                             'N nodes per job, one result per node; 1 = one '
                             f'job per node (default {plan.NODE_BATCH})')
    parser.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_ARGS',
                        help=argparse.SUPPRESS)
    parser.set_defaults(func=run)
    return parser


def _settings(values: list[str], what: str) -> dict[str, float]:
    """['12', 'OsuPointToPoint=20'] -> {'': 12.0, 'OsuPointToPoint': 20.0}"""
    found = {}
    for value in values:
        test, _, number = value.rpartition('=')
        try:
            found[test] = float(number)
        except ValueError:
            raise ValueError(f'{what} {value!r}: not [TEST=]NUMBER') from None
        if found[test] < 0:
            raise ValueError(f'{what} {value!r}: must be 0 or more')
    return found


def peer_rules(args) -> peers.Rules:
    tolerances = _settings(args.peer_tolerance, '--peer-tolerance')
    limits = _settings(args.peer_z, '--peer-z')
    if args.min_peers < 1:
        raise ValueError('--min-peers must be 1 or more')

    def rule(test: str) -> peers.Rule:
        return peers.Rule(
            tolerances.get(test, tolerances.get(
                '', 100 * peers.DEFAULT_TOLERANCE)) / 100,
            limits.get(test, limits.get('', peers.DEFAULT_Z_LIMIT)),
            args.min_peers)
    tests = sorted((set(tolerances) | set(limits)) - {''})
    return peers.Rules(rule(''), tuple((t, rule(t)) for t in tests))


def run(args) -> int:
    if args.retry_failed < 0 or args.confirm < 0 or (
            args.max_drain is not None and args.max_drain < 0):
        print('acceptance: --retry-failed, --confirm and --max-drain must be '
              '0 or more',
              file=sys.stderr)
        return session.EXIT_BROKEN
    if args.resume and (args.drain or args.dry_run):
        print('acceptance: --resume drains and resumes by itself; it takes '
              'no --drain or --dry-run', file=sys.stderr)
        return session.EXIT_BROKEN
    if args.node_batch < 1:
        print('acceptance: --node-batch must be 1 or more', file=sys.stderr)
        return session.EXIT_BROKEN
    if args.max_power_up < 0:
        print('acceptance: --max-power-up must be 0 or more', file=sys.stderr)
        return session.EXIT_BROKEN
    if args.dry_run and not (args.drain or args.report_to_azure):
        print('acceptance: --dry-run only makes sense with --drain or '
              '--report-to-azure', file=sys.stderr)
        return session.EXIT_BROKEN
    if args.max_reports is not None and args.max_reports < 0:
        print('acceptance: --max-reports must be 0 or more', file=sys.stderr)
        return session.EXIT_BROKEN
    if args.resume and args.report_to_azure:
        print('acceptance: --resume closes the reports of nodes that pass '
              'by itself; it takes no --report-to-azure', file=sys.stderr)
        return session.EXIT_BROKEN
    selection = plan.Selection(
        checks=args.checks or [str(session.REPO / 'checks')],
        tags=args.tag or [DEFAULT_TAG], excludes=args.exclude,
        extra=args.reframe_args,
        max_pending=None if args.max_pending == 'none' else args.max_pending)
    try:
        options = session.Options(
            selection=selection, system=args.system,
            partitions=args.partition, retries=args.retry_failed,
            drain=args.drain, dry_run=args.dry_run, max_drain=args.max_drain,
            peer_rules=peer_rules(args),
            baselines=baseline.Layer.from_setting(), confirm=args.confirm,
            repair_suspects=not args.no_repair, resume=args.resume,
            power_up=args.power_up, max_power_up=args.max_power_up,
            node_batch=args.node_batch,
            report_to_azure=args.report_to_azure,
            max_reports=args.max_reports)
        return session.run(options, say=lambda line: print(line, flush=True))
    except session.UnknownPartition as error:
        print(f'acceptance: {error}; on this system run:\n  '
              f'{command_line(given_arguments(), error.known)}',
              file=sys.stderr)
        return session.EXIT_BROKEN
    except ValueError as error:
        print(f'acceptance: {error}', file=sys.stderr)
        return session.EXIT_BROKEN


def given_arguments() -> list[str]:
    """The arguments after `acceptance` on this process's command line."""
    argv = sys.argv[1:]
    return argv[argv.index('acceptance') + 1:] if 'acceptance' in argv else []


def command_line(argv: list[str], partitions: list[str]) -> str:
    """This acceptance command (its arguments ``argv``) with ``partitions``
    instead of its own --partition options."""
    words, index = [], 0
    while index < len(argv):
        word = argv[index]
        if word == '--':
            words += argv[index:]
            break
        if word == '--partition':
            index += 2
            continue
        if not word.startswith('--partition='):
            words.append(word)
        index += 1
    chosen = [w for name in partitions for w in ('--partition', name)]
    return repo.clusterproof_command_line('acceptance', *chosen, *words)
