"""`clusterproof ingest TOOL FILE... --system S --partition P`: records from
hand-run benchmark logs into the local store, in the same columns as the
checks' records, so queries and reports see them beside ReFrame's.

Everything is checked before anything is stored (system, partition, every
file readable), all rows of one call land in the store at once or not at all,
and a record's id comes from the file's content and where it is stored, so
ingesting the same file again adds nothing."""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import socket
import sys
import uuid

from checks import parsers
from checks.common import references
from config.results.rows import builder, judge, schema as row_schema
from config.results.store import files as store

EXIT_USAGE = 2
# Fixed namespace: the same content, place and metric give the same id forever.
RECORD_NAMESPACE = uuid.UUID('6f1d8f5e-3c52-4c44-9a4e-1c2b7f0a9d31')


class UsageError(ValueError):
    """Bad arguments: nothing was stored."""


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'ingest', help='store the metrics of hand-run outputs',
        description='Parse outputs of hand-run benchmarks and append them to '
                    'the local store ($CLUSTERPROOF_HOME/results). A failed '
                    'or unreadable output is stored as a failed result with '
                    'its reason. Nothing is stored when an argument is wrong '
                    '(exit 2); a file already ingested for the same system, '
                    'partition and nodes adds nothing. Values are judged '
                    'against the references only with --reference-key (the '
                    'run was made like that check); otherwise they are '
                    'recorded as informational. A row\'s completion time '
                    '(check_job_completion_time) is the file\'s modification '
                    'time: when the tool finished writing it.')
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
    parser.add_argument('--reference-key', default=None, metavar='KEY',
                        help='the run was made the way the entry labelled KEY '
                             'under the SKU in checks/references/<tool>.yaml '
                             'was measured (its method; e.g. azhc for the '
                             'health checks\' STREAM): judge its values '
                             'against that entry')
    parser.set_defaults(func=run)


def partition_extras(system: str, partition: str) -> dict:
    """Extras of a partition of config/config.py; UsageError naming the
    known systems or partitions when it has none of that name."""
    from config import config as site
    systems = {entry['name']: entry
               for entry in site.site_configuration['systems']}
    if system not in systems:
        raise UsageError(f'unknown system {system!r}; known: '
                         f'{", ".join(sorted(systems))}')
    parts = {part['name']: part for part in systems[system]['partitions']}
    if partition not in parts:
        raise UsageError(f'unknown partition {partition!r} of system '
                         f'{system!r}; known: {", ".join(sorted(parts))}')
    return parts[partition].get('extras', {})


def read_all(paths: list[str]) -> dict[str, str]:
    """Every file's text, or UsageError naming the ones that cannot be read."""
    texts, problems = {}, []
    for path in paths:
        try:
            with open(path, errors='replace') as fp:
                texts[path] = fp.read()
        except OSError as err:
            problems.append(f'{path}: {err.strerror}')
    if problems:
        raise UsageError('cannot read ' + '; '.join(problems))
    return texts


def record_id(content: str, system: str, partition: str, nodes: list[str],
              tool: str, metric: str | None) -> str:
    digest = hashlib.sha256(content.encode('utf-8', 'replace')).hexdigest()
    key = '\n'.join([digest, system, partition, ','.join(sorted(nodes)),
                     tool, metric or ''])
    return str(uuid.uuid5(RECORD_NAMESPACE, key))


def verdict(value: float, unit: str, ref: references.Reference | None,
            nodes: list[str], reason: str | None = None) -> dict:
    """The judge's columns for a value (config/results/rows/judge.py), as a
    check's are against the same reference: a reference in another unit is
    not shown; one without thresholds is shown, not judged
    ('informational'), and so is a value without one."""
    shown = ref is not None and ref.unit == unit
    judged = shown and (ref.lower is not None or ref.upper is not None)
    measured = {'stage_result': judge.stage_result(
                    value, ref.value, ref.lower, ref.upper) if judged
                else 'informational'}
    if shown:
        measured.update(reference=ref.value, lower=ref.lower, upper=ref.upper,
                        reference_source=ref.source)
    return judge.measured_verdict(measured, reason, nodes)


def reference_family(tool: str) -> str:
    return tool.replace('-', '_')


def _completion_time(path: str) -> str:
    stamp = dt.datetime.fromtimestamp(os.path.getmtime(path),
                                      dt.timezone.utc)
    return stamp.isoformat()


def rows_for(result: parsers.ParseResult, base: dict, ids, refs: dict,
             peaks: dict) -> list[dict]:
    """``ids(metric)`` gives each row's record id."""
    outcome = 'pass' if result.ok else 'fail'
    common = {**base, 'check_result': outcome,
              'check_fail_reason': result.reason}
    if not result.ok or not result.metrics:
        return [row_schema.make_row({**common, 'record_id': ids(None)})]
    rows = []
    for name, metric in result.metrics.items():
        peak = peaks.get(name)
        rows.append(row_schema.make_row({
            **common,
            **verdict(metric.value, metric.unit, refs.get(name),
                      list(common.get('check_job_nodelist') or []),
                      result.reason),
            'record_id': ids(name),
            'check_perf_var': name,
            'check_perf_value': metric.value,
            'check_perf_unit': metric.unit,
            'check_perf_peak': peak.value if peak and peak.unit == metric.unit
            else None,
            'peak_source': peak.describe() if peak and
            peak.unit == metric.unit else None,
        }))
    return rows


def _stored_ids() -> set[str]:
    return {row.get('record_id') for row in store.iter_rows()}


def run(args) -> int:
    store.ensure_home('results')     # HomeError: one line, exit 2
    try:
        extras = partition_extras(args.system, args.partition)
        texts = read_all(args.files)
    except UsageError as err:
        print(f'clusterproof ingest: {err}; nothing stored', file=sys.stderr)
        return EXIT_USAGE
    vm_sku = args.vm_sku or extras.get('vm_sku')
    family = reference_family(args.tool)
    refs = references.lookup(family, args.reference_key, vm_sku) \
        if args.reference_key else {}
    if args.reference_key and not refs:
        print(f'clusterproof ingest: no reference {args.reference_key!r} for '
              f'{vm_sku or "this partition (no VM SKU)"} in '
              f'checks/references/{family}.yaml: values recorded as '
              'informational', file=sys.stderr)
    peaks = references.lookup_peaks(family, vm_sku)
    session = store.SessionFile(store.new_session_id())
    rows, failed = [], 0
    for path, text in texts.items():
        result = parsers.parse(args.tool, text)
        base = {
            'TimeGenerated': row_schema.now_iso(),
            'check_job_completion_time': _completion_time(path),
            'session_id': session.session_id,
            'facility': 'clusterproof-ingest',
            'data_version': row_schema.DATA_VERSION,
            'cluster': builder.cluster_name(args.system),
            'check_system': args.system,
            'check_partition': args.partition,
            'vm_sku': vm_sku,
            'check_name': f'ingest_{args.tool}',
            'check_display_name': f'{args.tool} (ingested '
                                  f'{os.path.basename(path)})',
            'check_job_nodelist': args.node,
            'check_tags': ['ingested'],
            'check_params': {'file': os.path.basename(path),
                             'reference_key': args.reference_key},
            'hostname': socket.gethostname(),
        }
        ids = lambda metric, text=text: record_id(  # noqa: E731
            text, args.system, args.partition, args.node, args.tool, metric)
        rows += rows_for(result, base, ids, refs, peaks)
        if not result.ok:
            failed += 1
            print(f'{path}: failed: {result.reason}', file=sys.stderr)
    known = _stored_ids()
    new = [row for row in rows if row['record_id'] not in known]
    if new:
        try:
            session.write_all(new)
        except OSError as err:
            print(f'clusterproof ingest: cannot store {len(new)} record(s) in '
                  f'{session.path}: {err.strerror or err}; nothing stored '
                  '(the files are unchanged: ingest them again)',
                  file=sys.stderr)
            return 1
        where = f'in {session.path} (session {session.session_id})'
    else:
        where = 'nothing new to store'
    print(f'stored {len(new)} record(s) from {len(texts)} file(s) '
          f'({failed} failed, {len(rows) - len(new)} already stored): '
          f'{where}')
    return 0 if not failed else 1
