"""`clusterproof ingest TOOL FILE... --system S --partition P`: records from
hand-run benchmark logs into the local store, in the same columns as the
checks' records, so queries and reports see them beside ReFrame's."""
from __future__ import annotations

import datetime as dt
import os
import socket
import sys
import uuid

from checks import parsers
from config import records, store


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'ingest', help='store the metrics of hand-run outputs',
        description='Parse outputs of hand-run benchmarks and append them to '
                    'the local store ($CLUSTERPROOF_HOME/results). A failed '
                    'or unreadable output is stored as a failed result with '
                    'its reason.')
    parser.add_argument('tool', choices=sorted(parsers.TOOLS), metavar='TOOL',
                        help=' '.join(sorted(parsers.TOOLS)))
    parser.add_argument('files', nargs='+', metavar='FILE')
    parser.add_argument('--system', required=True,
                        help='system name, as in the ReFrame config')
    parser.add_argument('--partition', required=True,
                        help='partition name, as in the ReFrame config')
    parser.add_argument('--vm-sku', default=None,
                        help="VM SKU (default: the partition's extras)")
    parser.add_argument('--node', action='append', default=[],
                        help='node the run used (repeatable)')
    parser.set_defaults(func=run)


def partition_extras(system: str, partition: str) -> dict:
    """Extras of a partition of config/config.py, or {} if unknown."""
    from config import config as site
    for entry in site.site_configuration['systems']:
        if entry['name'] != system:
            continue
        for part in entry['partitions']:
            if part['name'] == partition:
                return part.get('extras', {})
    return {}


def _completion_time(path: str) -> str:
    stamp = dt.datetime.fromtimestamp(os.path.getmtime(path),
                                      dt.timezone.utc)
    return stamp.isoformat()


def rows_for(result: parsers.ParseResult, base: dict) -> list[dict]:
    verdict = 'pass' if result.ok else 'fail'
    common = {**base, 'check_result': verdict,
              'check_fail_reason': result.reason}
    if not result.ok or not result.metrics:
        return [records.make_row({**common, 'record_id': str(uuid.uuid4())})]
    return [records.make_row({
        **common,
        'record_id': str(uuid.uuid4()),
        'check_perf_var': name,
        'check_perf_value': metric.value,
        'check_perf_unit': metric.unit,
        'check_perf_result': 'no_reference',
    }) for name, metric in result.metrics.items()]


def run(args) -> int:
    extras = partition_extras(args.system, args.partition)
    vm_sku = args.vm_sku or extras.get('vm_sku')
    session = store.SessionFile(store.new_session_id())
    stored = failed = 0
    for path in args.files:
        try:
            with open(path, errors='replace') as fp:
                text = fp.read()
        except OSError as err:
            print(f'clusterproof ingest: cannot read {path}: {err.strerror}',
                  file=sys.stderr)
            return 2
        result = parsers.parse(args.tool, text)
        base = {
            'TimeGenerated': records.now_iso(),
            'check_job_completion_time': _completion_time(path),
            'session_id': session.session_id,
            'facility': 'clusterproof-ingest',
            'data_version': records.DATA_VERSION,
            'cluster': records.cluster_name(args.system),
            'check_system': args.system,
            'check_partition': args.partition,
            'vm_sku': vm_sku,
            'check_name': f'ingest_{args.tool}',
            'check_display_name': f'{args.tool} (ingested '
                                  f'{os.path.basename(path)})',
            'check_job_nodelist': args.node,
            'check_tags': ['ingested'],
            'check_params': {'file': os.path.basename(path)},
            'hostname': socket.gethostname(),
        }
        for row in rows_for(result, base):
            session.append(row)
            stored += 1
        if not result.ok:
            failed += 1
            print(f'{path}: failed: {result.reason}', file=sys.stderr)
    print(f'stored {stored} record(s) from {len(args.files)} file(s) '
          f'({failed} failed) in {session.path}')
    return 0 if not failed else 1
