"""`clusterproof azure-reports`: the Guest Health Reports acceptance sent
(scripts/guest_health), and what Azure did with the open ones."""
from __future__ import annotations

import sys

from scripts.guest_health import follow_up, ledger


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'azure-reports', help='list the Guest Health Reports sent to Azure '
                              'and follow up the open ones',
        description='List the Guest Health Reports `acceptance '
                    '--report-to-azure` sent (the ledger in '
                    '$CLUSTERPROOF_HOME/azure_reports): node, category, '
                    'physical host, state. With --follow-up, read the '
                    'insights Azure published for each open report and say '
                    'what to do next (deallocate the VM, then `acceptance '
                    '--resume`, which closes the report of a node that '
                    'passes on another physical host). Exit 0; 1 when an '
                    'open report\'s insights could not be read.')
    parser.add_argument('--follow-up', action='store_true',
                        help="read each open report's insights from Azure")
    parser.set_defaults(func=run)
    return parser


def run(args) -> int:
    try:
        reports = ledger.reports()
    except ledger.LedgerError as error:
        print(f'azure-reports: {error}', file=sys.stderr)
        return 2
    if not reports:
        print(f'no Guest Health Report sent yet (ledger: {ledger.path()})')
        return 0
    for name, r in sorted(reports.items(), key=lambda kv: kv[1].get('at')):
        print(f"{r.get('at', '')[:19]}  {r.get('node')}  "
              f"{r.get('category')}  host {r.get('physical_host')}  "
              f"{r.get('state')}  {name}")
    if not args.follow_up:
        return 0
    found = follow_up.follow(lambda line: print(line, flush=True))
    return 1 if any('error' in f for f in found) else 0
