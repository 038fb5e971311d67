"""What an acceptance run tells: a table for people, JSON for scripts, and
rows in the local store for what could not be measured (so KQL sees it)."""
from __future__ import annotations

import json
import uuid
from pathlib import Path

from config.results.rows import builder, schema as row_schema
from config.results.store import files as store

from .findings import (BAD, FAIL, FLAKY, GOOD, NODE_VERDICTS, NOT_JUDGED,
                       NOT_MEASURED, PASS, PASSED_AGAIN, POWERED_DOWN,
                       WHOLE_PARTITION, Finding)
from .verdicts import NodeVerdict

COLUMNS = ('node', 'check', 'metric', 'value', 'reference', 'verdict',
           'reason')
ROW_FACILITY = 'clusterproof-acceptance'
BASIS_PREFIX = {'peers': 'peers: ', 'site_baseline': 'site baseline: '}


def _number(value) -> str:
    if value is None:
        return '-'
    return f'{value:g}' if isinstance(value, float) else str(value)


def whole_partition_passes(findings: list[Finding]) -> list[dict]:
    """Checks that ran once per partition and passed: {partition, check,
    results} (the number of perf results within reference or without
    verdict), in the order they ran."""
    cases: dict[tuple, list[Finding]] = {}
    for f in findings:
        if f.node == WHOLE_PARTITION:
            cases.setdefault((f.partition, f.check), []).append(f)
    return [{'partition': partition, 'check': check,
             'results': sum(1 for f in found if f.metric)}
            for (partition, check), found in cases.items()
            if not any(f.verdict in (FAIL, NOT_MEASURED, POWERED_DOWN)
                       for f in found)]


def check_counts(findings: list[Finding]) -> dict[str, int]:
    """Test cases by outcome: failed where a finding failed, else not
    measured where one was not measured, else passed."""
    cases: dict[tuple, set] = {}
    for f in findings:
        cases.setdefault((f.partition, f.check, f.jobid, f.node),
                         set()).add(f.verdict)
    counts = {PASS: 0, FAIL: 0, NOT_MEASURED: 0}
    for verdicts in cases.values():
        if FAIL in verdicts:
            counts[FAIL] += 1
        elif verdicts & {NOT_MEASURED, POWERED_DOWN}:
            counts[NOT_MEASURED] += 1
        else:
            counts[PASS] += 1
    return counts


def node_counts(verdicts: list[NodeVerdict]) -> dict[str, int]:
    counts = {verdict: 0 for verdict in NODE_VERDICTS}
    for v in verdicts:
        counts[v.verdict] += 1
    return counts


def count_line(nodes: dict[str, int], checks: dict[str, int]) -> str:
    node_part = ', '.join(f'{n} {v.replace("_", " ")}'
                          for v, n in nodes.items())
    return (f'{sum(nodes.values())} node(s): {node_part}; '
            f'{sum(checks.values())} check result(s): {checks[PASS]} '
            f'passed, {checks[FAIL]} failed, {checks[NOT_MEASURED]} not '
            'measured')


def table_lines(verdicts: list[NodeVerdict],
                partition_findings: list[Finding],
                partition_passes: list[dict] = ()) -> list[str]:
    """Bad nodes first, then suspect, not measured, good; one line per
    finding that explains a verdict, one line per good node, and one per
    check that passed once for its whole partition."""
    rows = []
    for verdict in verdicts:
        if verdict.verdict == GOOD:
            aside = [f.set_aside for f in verdict.findings if f.set_aside]
            rows.append((verdict.node, '-', '-', '-', '-', GOOD,
                         f'{len(verdict.findings) - len(aside)} result(s) '
                         'within reference or without verdict' + ''.join(
                             f'; {aside.count(why)} failure(s) {why}'
                             for why in sorted(set(aside)))))
            continue
        for f in verdict.worst_findings():
            unit = f' {f.unit}' if f.unit else ''
            partner = f'(with {f.partner}) ' if f.partner else ''
            again = f'{PASSED_AGAIN}; first: ' if f.flaky else ''
            rows.append((verdict.node, f.check, f.metric or '-',
                         _number(f.value) + unit,
                         _number(f.reference) + (unit if f.reference
                                                  is not None else ''),
                         verdict.verdict,
                         (again + partner + basis_prefix(f)
                          + f.reason).strip()))
    for f in partition_findings:
        rows.append((f'{f.partition} (whole)', f.check, f.metric or '-',
                     _number(f.value), _number(f.reference), f.verdict,
                     f.reason))
    for p in partition_passes:
        rows.append((f"{p['partition']} (whole)", p['check'], '-', '-', '-',
                     PASS, f"{p['results']} result(s) within reference or "
                     'without verdict'))
    if not rows:
        return ['no node measured']
    widths = [max(len(str(r[i])) for r in rows + [COLUMNS])
              for i in range(len(COLUMNS) - 1)]
    lines = []
    for row in [COLUMNS] + rows:
        cells = [str(c).ljust(w) for c, w in zip(row, widths)]
        lines.append('  '.join(cells + [_one_line(str(row[-1]))]).rstrip())
    return lines


def _what(f: Finding) -> str:
    """'sb-n3 StreamCheck triad_bw' (with its partner for a pair)."""
    partner = f' (with {f.partner})' if f.partner else ''
    return ' '.join(filter(None, (f.node, f.check, f.metric))) + partner


def apart(verdicts: list[NodeVerdict]) -> dict[str, list[Finding]]:
    """The findings that explain a verdict, apart by how sure it is:
    confirmed (failed again when measured again alone), unconfirmed
    (measured once), flaky (did not repeat) and not judged."""
    found = {'confirmed': [], 'unconfirmed': [], FLAKY: [], NOT_JUDGED: []}
    for v in verdicts:
        if v.verdict == BAD:
            for f in v.worst_findings():
                found['confirmed' if f.confirmed else 'unconfirmed'].append(f)
        elif v.verdict in (FLAKY, NOT_JUDGED):
            found[v.verdict] += v.worst_findings()
    return found


APART_WORDS = {
    'confirmed': 'confirmed (failed again when measured again alone)',
    'unconfirmed': 'not confirmed (measured once: not drained or reported)',
    FLAKY: 'flaky (failed once, passed when measured again: never drained '
           'or reported)',
    NOT_JUDGED: 'not judged (no reference, and peers could not say)'}


def apart_lines(verdicts: list[NodeVerdict], confirm: int = 1) -> list[str]:
    """After the table: the bad nodes' findings confirmed and not, the
    flaky and the not-judged ones, each kind on its own lines."""
    lines = []
    for kind, found in apart(verdicts).items():
        if not found:
            continue
        words = APART_WORDS[kind]
        if kind == 'unconfirmed' and not confirm:
            words = words.replace('measured once', 'measured once, --confirm 0')
        lines.append(f'{words}: {len(found)} finding(s)')
        for f in found:
            reason = f'{PASSED_AGAIN}; first: ' if f.flaky else ''
            reason += basis_prefix(f) + f.reason
            lines.append(f'  {_what(f)}: {_one_line(reason, 120)}')
    return lines


def basis_prefix(f: Finding) -> str:
    """'peers: ' or 'site baseline: ' before a reason (a published
    reference's reason says 'bound' and 'reference' itself; a not-judged
    finding says which basis could not judge it)."""
    if f.verdict == NOT_JUDGED:
        return ''
    return BASIS_PREFIX.get(f.basis, '')


def _one_line(text: str, limit: int = 160) -> str:
    text = ' '.join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + '…'


def summary_document(session_id: str, exit_code: int, verdicts, partitions,
                     broken: list[str], drains: list[dict],
                     notes: list[str], findings: list[Finding] = ()) -> dict:
    """``findings``: every finding of the run (the passes included)."""
    return {
        'session_id': session_id,
        'finished': row_schema.now_iso(),
        'exit_code': exit_code,
        'broken': broken,
        'notes': notes,
        'counts': {'nodes': node_counts(verdicts),
                   'checks': check_counts(list(findings))},
        'nodes': [{'node': v.node, 'partition': v.partition,
                   'verdict': v.verdict,
                   'findings': [f.as_dict() for f in v.findings]}
                  for v in verdicts],
        'partition_findings': [f.as_dict() for f in partitions],
        # the findings behind bad, flaky and not-judged nodes, apart
        'apart': {kind: [f.as_dict() for f in found]
                  for kind, found in apart(list(verdicts)).items()},
        'partition_passes': whole_partition_passes(list(findings)),
        'drain': drains,
    }


def write_summary(document: dict, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / 'summary.json'
    path.write_text(json.dumps(document, indent=2, default=str) + '\n')
    return path


def not_measured_rows(verdicts: list[NodeVerdict],
                      partition_findings: list[Finding],
                      session_id: str) -> list[dict]:
    """One store row per finding that is not measured (powered-down nodes
    included): check_perf_result 'not_measured', the node in
    check_job_nodelist, the reason."""
    findings = [f for v in verdicts for f in v.findings
                if f.verdict in (NOT_MEASURED, POWERED_DOWN)]
    findings += [f for f in partition_findings if f.verdict == NOT_MEASURED]
    return [_finding_row(f, session_id, NOT_MEASURED, 'not_measured')
            for f in findings]


def _finding_row(f: Finding, session_id: str, perf_result: str,
                 result: str, **values) -> dict:
    system, _, partition = f.partition.partition(':')
    return row_schema.make_row({
        **_acceptance_row(session_id),
        'cluster': builder.cluster_name(system),
        'check_system': system,
        'check_partition': partition,
        'check_name': f.check.split('%')[0].strip(),
        'check_display_name': f.check,
        'check_perf_result': perf_result,
        'check_result': result,
        'check_fail_reason': f.reason,
        'check_jobid': f.jobid,
        'check_job_nodelist': [] if f.node.startswith('*') else [f.node],
        **values,
    })


def _acceptance_row(session_id: str) -> dict:
    """What every row acceptance writes itself has."""
    return {'TimeGenerated': row_schema.now_iso(),
            'record_id': str(uuid.uuid4()), 'session_id': session_id,
            'facility': ROW_FACILITY, 'data_version': row_schema.DATA_VERSION,
            'check_tags': ['acceptance']}


# What a verdict row copies from the row it judges.
_JUDGED_COLUMNS = ('cluster', 'check_system', 'check_partition', 'vm_sku',
                   'check_name', 'check_display_name', 'check_environ',
                   'check_perf_var', 'device', 'check_perf_unit',
                   'check_jobid', 'check_job_nodelist', 'reference_key',
                   'check_params')


def verdict_row(judged: dict, session_id: str, verdict: str, basis: str,
                reason: str, reference: float | None = None) -> dict:
    """A verdict decided after the run (peers, site baseline) about one
    stored row, which never changes: facility clusterproof-acceptance, the
    judged row's record_id, the basis, the verdict and the reason; the
    value stays on the judged row (check_perf_value is null here, so no
    query counts the measurement twice), what it was held against is
    check_perf_ref."""
    values = {name: judged.get(name) for name in _JUDGED_COLUMNS}
    return row_schema.make_row({
        **values,
        **_acceptance_row(session_id),
        'judged_record_id': judged['record_id'],
        'verdict_basis': basis,
        'check_perf_result': verdict,
        # a flaky failure passed when measured again; not judged is
        # neither
        'check_result': {FAIL: FAIL, FLAKY: PASS}.get(verdict),
        'check_fail_reason': reason if verdict != PASS else None,
        'check_perf_ref': reference,
    })


def shared_failure_rows(partition_findings: list[Finding],
                        session_id: str) -> list[dict]:
    """One row per common-mode partition finding (no node named)."""
    return [_finding_row(f, session_id, FAIL, FAIL, check_perf_var=f.metric)
            for f in partition_findings if f.scope == 'common']


def store_rows(rows: list[dict], session_id: str) -> Path | None:
    if not rows:
        return None
    session_file = store.SessionFile(session_id)
    for row in rows:
        session_file.append(row)
    return session_file.path
