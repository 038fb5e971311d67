"""`clusterproof sync`: ship to Log Analytics every stored row it has not
accepted yet (config/results/azure/sync.py does the work; this is the command line).

Exit 0 when everything is shipped, 1 when some rows are left to retry or
set aside (and why), 2 on bad usage, when Azure is not configured (except
for --dry-run, which needs no endpoint: it lists the backlog and says Azure
is not configured) or when Log Analytics refuses the configuration (401/403,
wrong DCR or stream, schema error).
"""
from __future__ import annotations

import datetime as dt
import itertools
import sys

EXIT_OK, EXIT_LEFT, EXIT_USAGE = 0, 1, 2
EXIT_REFUSED = 2


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'sync', help='ship stored results Log Analytics has not accepted yet',
        description='Ship every row of the local store ($CLUSTERPROOF_HOME/'
                    'results) that no ledger marks as accepted by Log '
                    'Analytics, in batches of at most 1 MB, and say what '
                    'was shipped. Sessions still running are left to their '
                    'own live push. Exit 0 when everything is shipped, 1 '
                    'when some rows are left to retry or set aside (a row '
                    'alone over 1 MB), 2 when Azure is not configured '
                    '(--dry-run lists the backlog without it) or Log '
                    'Analytics refuses the configuration (401/403, a '
                    'wrong DCR or stream, a schema error).')
    parser.add_argument('--dry-run', action='store_true',
                        help='say what would be shipped; send nothing')
    parser.add_argument('--session', metavar='ID',
                        help='only this session (its store file name)')
    parser.add_argument('--since', metavar='DATE', type=_date,
                        help='only sessions from DATE (YYYY-MM-DD) on')
    parser.add_argument('--uploads', type=_uploads, default=3, metavar='N',
                        help='uploads in flight at once, 1 to 4 (default '
                             '3); after a 429 they all wait its '
                             'Retry-After')
    parser.add_argument('--verify', action='store_true',
                        help='also ask Log Analytics (LOGS_WORKSPACE_ID) '
                             'which acknowledged rows it holds, and ship '
                             'the missing ones again')
    parser.add_argument('--days', type=_span(36500), default=7, metavar='N',
                        help='--verify: rows acknowledged in the last N '
                             'days (default 7)')
    parser.add_argument('--min-age', type=_span(36500 * 1440), default=60,
                        metavar='MIN',
                        help='--verify: only rows acknowledged at least MIN '
                             'minutes ago, so ingestion is done (default 60)')
    parser.set_defaults(func=run)


def _span(maximum: float):
    """An argparse type: a number from 0 to maximum (exit 2 otherwise)."""
    import argparse
    import math

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 <= value <= maximum:     # also NaN
            raise argparse.ArgumentTypeError(
                f'{text!r} is not a number from 0 to {maximum:g}')
        return value
    number.__name__ = 'number'
    return number


def _uploads(text: str) -> int:
    import argparse
    if text.isdigit() and 1 <= int(text) <= 4:
        return int(text)
    raise argparse.ArgumentTypeError(f'{text!r}: a number from 1 to 4')


def _date(text: str) -> dt.date:
    import argparse
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'{text!r} is not a date (YYYY-MM-DD)') from None


def say(message: str) -> None:
    print(f'clusterproof sync: {message}', flush=True)


def complain(message: str) -> None:
    print(f'clusterproof sync: {message}', file=sys.stderr, flush=True)


def not_configured(tell=complain) -> int:
    from config.results.store import files as store
    from scripts.cli.deploy import default_env_file
    tell('Azure Log Analytics is not configured: set '
         'DATA_COLLECTION_ENDPOINT and LOGS_DCR_RULE_ID (and '
         'LOGS_DCR_STREAM_NAME if not Custom-ReFrameResults_CL), e.g. '
         f'`source {default_env_file()}` after `clusterproof deploy`. '
         f'Every result is still in the local store ({store.results_dir()}).')
    return EXIT_USAGE


class Progress:
    """A progress line on a terminal for long backlogs; silent otherwise."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.shown = False

    def on_terminal(self) -> bool:
        return self.stream.isatty()

    def __call__(self, shipped: int, total: int) -> None:
        if total >= 1000 and self.on_terminal():
            self.stream.write(f'\rclusterproof sync: {shipped} of {total} '
                              f'rows shipped')
            self.stream.flush()
            self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write('\n')


def report(tally, stopped, earlier_aside=0) -> int:
    from config.results.azure import shipping
    line = (f'{tally.shipped} of {tally.offered} rows shipped in '
            f'{tally.calls} call(s)')
    if tally.failures:
        line += (f'; failed calls: '
                 f'{shipping.Tally.describe(tally.failures)}')
    say(line)
    status = EXIT_OK
    if tally.unrecorded:
        complain(f'{tally.unrecorded} row(s) were accepted but their ledger '
                 f'could not be written: the next sync sends them again')
        status = EXIT_LEFT
    if tally.aside:
        complain(f'{sum(tally.aside.values())} row(s) set aside for good '
                 f'({shipping.Tally.describe(tally.aside)}), noted in '
                 f'<session>.rejected beside the store file: every later '
                 f'sync leaves them out; they stay in the local store')
        status = EXIT_LEFT
    if earlier_aside:
        complain(f'{earlier_aside} row(s) set aside earlier '
                 f'(alone over the 1 MB limit; see the *.rejected files): '
                 f'not sent again')
        status = EXIT_LEFT
    if tally.left_total():
        complain(f'{tally.left_total()} row(s) left in the local store '
                 f'({shipping.Tally.describe(tally.left)})'
                 + ("; run 'clusterproof sync' again later"
                    if stopped is None else ''))
        status = EXIT_LEFT
    if stopped is not None:
        complain(shipping.auth_advice(stopped))
        return EXIT_REFUSED
    return status


def run(args) -> int:
    # Imported here: `clusterproof --help` and the other commands must not
    # need ReFrame or the Azure SDK.
    from config.results.azure import ingestion, sync as backlog
    from config.results.store import files as store
    settings = ingestion.settings()
    if settings is None and args.dry_run and not args.verify:
        not_configured(tell=say)
        return _sync(args)
    if settings is None:
        return not_configured()
    wrong = ingestion.problems(settings)
    if wrong:
        for problem in wrong:
            complain(problem)
        return EXIT_USAGE
    store.existing_home()     # a typo must not answer "nothing to ship"
    if args.verify and ingestion.workspace_settings() is None:
        complain('--verify reads Log Analytics: set LOGS_WORKSPACE_ID (the '
                 "workspace's customer id, an output of `clusterproof "
                 "deploy`)")
        return EXIT_USAGE
    lock = backlog.sync_lock()
    if not lock.acquire():
        complain(f'another clusterproof sync is running ({lock.path}); '
                 f'nothing done')
        return EXIT_LEFT
    try:
        return _sync(args)
    except KeyboardInterrupt:
        # The ledger holds every call accepted so far: nothing is lost and
        # the next sync does not send it again.
        complain('interrupted; what was accepted is in the ledgers, run '
                 "'clusterproof sync' again to ship the rest")
        return EXIT_LEFT
    finally:
        lock.release()


def _sync(args) -> int:
    from config.results.azure import sync as backlog, verify
    found = backlog.StoredBacklog(args.session, args.since)
    for session in found.running:
        say(f'session {session} is still running; its live push ships it')
    if args.dry_run:
        rows = sum(len(chunk) for chunk in found.chunks())
        for session, count in sorted(found.sessions.items()):
            say(f'would ship {count} row(s) of session {session}')
        say(f'would ship {rows} row(s) in all'
            + (' (and check acknowledged rows with --verify)'
               if args.verify else ''))
        return EXIT_OK
    if args.verify:
        workspace = verify.default_workspace()
        try:
            workspace.can_read()
        except verify.NoReadAccess as err:
            complain(f'cannot read Log Analytics workspace '
                     f'{workspace.workspace_id} ({err}): --verify needs the '
                     f"'Log Analytics Reader' role on it; nothing done")
            return EXIT_USAGE
    with found.chunks_from_a_process() as chunks:
        # made while that process reads the first files: the Azure SDK's
        # imports take as long as reading a dozen bodies
        transport = backlog.default_transport()
        first = next(chunks, None)
        if first is None and not args.verify:
            if found.set_aside:
                return report(backlog.shipping.Tally(), None,
                              len(found.set_aside))
            say('nothing to ship: Log Analytics has accepted every stored '
                'row')
            return EXIT_OK
        progress = Progress()
        tally, stopped = backlog.ship_stored(
            itertools.chain([first] if first else [], chunks), transport,
            progress, in_flight=args.uploads,
            # a second read of every file, for the progress line alone
            total=found.estimate() if progress.on_terminal() else 0)
        progress.done()
    if args.verify and stopped is None:
        missing = _missing_after_verify(args)
        if missing is None:
            return EXIT_USAGE
        if missing.rows:
            say(f'{len(missing.rows)} acknowledged row(s) are missing from '
                f'Log Analytics; shipping them again')
            again, stopped = backlog.ship(missing.rows, missing.ledger_of,
                                          transport, progress)
            progress.done()
            _merge(tally, again)
    return report(tally, stopped, len(found.set_aside))


def _missing_after_verify(args):
    from config.results.azure import sync as backlog, verify
    acked = verify.acknowledged(args.min_age * 60, args.days)
    workspace = verify.default_workspace()
    try:
        held = workspace.held([row['record_id'] for row in acked.rows],
                              args.days)
    except verify.NoReadAccess as err:
        complain(f'cannot read Log Analytics ({err}); nothing re-shipped')
        return None
    say(f'verified {len(acked.rows)} acknowledged row(s): '
        f'{len(acked.rows) - len(set(acked.ledger_of) - held)} in Log '
        f'Analytics')
    _report_empty_columns(workspace, [row for row in acked.rows
                                      if row['record_id'] in held], args.days)
    missing = backlog.Backlog()
    for row in acked.rows:
        if row['record_id'] not in held:
            missing.rows.append(row)
            missing.ledger_of[row['record_id']] = \
                acked.ledger_of[row['record_id']]
    return missing


def _report_empty_columns(workspace, rows, days) -> None:
    """Rows that arrived without columns they were sent with: the DCR the
    workspace runs does not declare them (clusterproof deploy updates it)."""
    from config.results.azure import verify
    if not rows:
        return
    try:
        empty = verify.empty_columns(rows, workspace.columns_of(rows, days))
    except verify.NoReadAccess as err:
        complain(f'cannot read the rows\' columns ({err})')
        return
    for column, count in empty.items():
        say(f'{count} row(s) arrived with {column} empty although it was '
            'sent: the deployed table or DCR does not declare it (schema '
            f'data_version {_data_version()}); run `clusterproof deploy`')


def _data_version() -> str:
    from config.results.rows import schema as row_schema
    return row_schema.DATA_VERSION


def _merge(total, more) -> None:
    total.add(offered=more.offered, shipped=more.shipped, calls=more.calls,
              unrecorded=more.unrecorded)
    total.left.update(more.left)
    total.aside.update(more.aside)
    total.failures.update(more.failures)
