"""`clusterproof discover`: write the site file from the cluster's sinfo."""
from __future__ import annotations

import sys
from pathlib import Path

from config.results.store import files as store
from config.systems import discovery, site_file
from config.systems.azure_skus import SKUS


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'discover', help="write the site file of this cluster's partitions",
        description='List the Slurm partitions of this cluster with sinfo '
                    '(nodes, CPUs, memory, gres, features, states), propose '
                    'the SKU family of each from its shape (or from a VM-size '
                    'node feature, as on CycleCloud dynamic partitions), and '
                    f'write them to $CLUSTERPROOF_HOME/{site_file.FILE_NAME}, '
                    'which the azure system reads when '
                    'CLUSTERPROOF_AZURE_PARTITIONS is not set. Where shapes '
                    'are ambiguous it writes the candidates and says so, '
                    'unless the VM sizes earlier jobs recorded in the local '
                    'store (vm_sku_observed) settle it. It never starts a '
                    'node. Exit 0: written; 1: no Slurm here '
                    'or sinfo failed.')
    parser.add_argument('--out', type=Path, metavar='FILE',
                        help='write there instead (e.g. the root timer\'s '
                             f'/var/lib/clusterproof/{site_file.FILE_NAME})')
    parser.add_argument('--print', action='store_true', dest='print_only',
                        help='print the file instead of writing it')
    parser.set_defaults(func=run)
    return parser


def _summary_line(proposal) -> str:
    part = proposal.partition
    if not proposal.candidates:
        return f'  {part.name}: {proposal.basis}: no SKU family; not tested'
    sku = SKUS[proposal.family]['extras']['vm_sku']
    line = f'  {part.name}: {proposal.family} ({sku}) from {proposal.basis}'
    if len(proposal.candidates) > 1:
        line += (f'; AMBIGUOUS, could be {", ".join(proposal.candidates)}: '
                 'the first job\'s observed VM size settles it')
    down = sum(count for state, count in part.states.items()
               if state.endswith('~'))
    if down:
        line += (f'; {down} of {len(part.nodes)} nodes powered down '
                 '(`clusterproof acceptance --power-up` starts them)')
    return line


def run(args) -> int:
    try:
        proposals = discovery.discover()
    except discovery.DiscoveryError as error:
        print(f'discover: {error}', file=sys.stderr)
        return 1
    # the VM sizes earlier jobs recorded settle look-alike partitions
    observed = discovery.observed_by_node(store.iter_rows())
    proposals = [discovery.settle(p, observed) for p in proposals]
    if args.print_only:
        print(site_file.render(proposals), end='')
        return 0
    for proposal in proposals:
        print(_summary_line(proposal))
    target = site_file.write(proposals, args.out)
    print(f'wrote {target}: review it, then run e.g. '
          '`reframe -C config/config.py -c checks -t acceptance -r`')
    return 0
