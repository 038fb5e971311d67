"""`acceptance --report-to-azure`: one Guest Health Report per confirmed
bad node, after the verdicts are final.

A node is reported when it is bad, one of its failures is confirmed (it
failed every re-measurement of --confirm N), that
failure maps to a category (categories.py), and the node tells its VM id
and physical host (identity.py). Nothing else is reported, and the summary
says why for each bad node left out. More nodes to report than
--max-reports reports nothing: that many bad nodes at once is a wrong
reference or a broken partition, not that many bad hosts.

A report's name is a GUID derived from the session, the node and the
finding, written to the ledger before it is sent: a retry (or a later run
after a lost answer) sends the same name again, and Azure's 409 for a name
it has counts as filed. A node with a report still open is not reported
again."""
from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass, field

from config.results import settings
from config.results.rows import builder, schema as row_schema
from scripts.acceptance import verdicts
from scripts.acceptance.findings import FAIL, Finding

from . import categories, identity, impact_api, ledger

NAMESPACE = uuid.UUID('6b1f4f0e-5a55-4c1e-9a51-2f6c3c0de040')
DESCRIPTION_LIMIT = 2000
DEFAULT_FRACTION = 0.1
ROW_METRIC = 'guest_health_report'
ROW_TEST = 'GuestHealthReport'


@dataclass
class Plan:
    """A report to send (or why a bad node gets none)."""
    node: str
    partition: str
    finding: Finding | None = None
    mapping: categories.Mapping | None = None
    evidence: list[Finding] = field(default_factory=list)
    why_not: str = ''


def kind_of(finding: Finding) -> str:
    return finding.kind or verdicts.class_name({'name': finding.check})


def confirmed(finding: Finding) -> tuple[bool, str]:
    """Whether a failure was measured again and failed every time."""
    if finding.verdict != FAIL or finding.set_aside or \
            finding.blamed_on_partner:
        return False, 'not a failure of this node'
    if finding.confirmations:
        if all(str(c).startswith(FAIL) for c in finding.confirmations):
            return True, (f'failed {len(finding.confirmations)} '
                          're-measurement(s) too')
        return False, ('not confirmed: re-measured as '
                       + ', '.join(map(str, finding.confirmations)))
    # ReFrame's own retries (--retry-failed) are not enough: a batch job
    # is retried when any of its nodes failed, so a later attempt's
    # failure need not be this node's second one
    return False, ('not confirmed: measured once (run with --confirm N to '
                   're-measure a failure before it is reported)')


# The first category of the table goes first (an XID's own category, not
# in the table, before all)
_ORDER: dict[str, int] = {}
for _index, _mapping in enumerate(categories.MAPPINGS):
    _ORDER.setdefault(_mapping.category, _index)


def plan(node_verdicts) -> list[Plan]:
    """A Plan for every bad node: the failure to report, or why none."""
    plans = []
    for v in node_verdicts:
        if v.verdict != verdicts.BAD:
            continue
        reasons, chosen = [], []
        for finding in v.worst_findings():
            kind = kind_of(finding)
            ok, said = confirmed(finding)
            mapping = categories.mapping_for(kind, finding.value)
            if not ok:
                reasons.append(f'{finding.check}: {said}')
            elif mapping is None:
                reasons.append(f'{finding.check}: '
                               f'{categories.unmapped_reason(kind)}')
            else:
                chosen.append((finding, mapping))
        if not chosen:
            plans.append(Plan(v.node, v.partition, why_not='; '.join(
                reasons) or 'no failure of its own'))
            continue
        chosen.sort(key=lambda fm: _ORDER.get(fm[1].category, -1))
        finding, mapping = chosen[0]
        plans.append(Plan(v.node, v.partition, finding, mapping, [
            f for f, m in chosen if m.category == mapping.category]))
    return plans


def report_name(session_id: str, node: str, finding: Finding) -> str:
    key = '|'.join(str(part) for part in (
        session_id, node, finding.check, finding.metric, finding.device,
        kind_of(finding)))
    return str(uuid.uuid5(NAMESPACE, key))


def _number(value) -> str:
    return f'{value:g}' if isinstance(value, (int, float)) else str(value)


def evidence_line(finding: Finding) -> str:
    parts = [finding.check]
    if finding.device:
        parts.append(f'device {finding.device}')
    gpu = finding.gpu or {}
    if gpu.get('index') is not None:
        parts.append(f"GPU {gpu['index']} (bus id {gpu.get('bus_id')}, "
                     f"serial {gpu.get('serial')})")
    if finding.metric:
        unit = f' {finding.unit}' if finding.unit else ''
        value = f'{finding.metric}={_number(finding.value)}{unit}'
        if finding.reference is not None:
            value += (f' against {_number(finding.reference)}{unit} '
                      f'({finding.basis or "reference"})')
        parts.append(value)
    if finding.reason:
        parts.append(' '.join(finding.reason.split()))
    parts.append(confirmed(finding)[1])
    if finding.jobid:
        parts.append(f'job {finding.jobid}')
    return ', '.join(parts)


def description(found: Plan, session_id: str) -> str:
    text = (f'clusterproof acceptance session {session_id}: node '
            f'{found.node} ({found.partition}) is bad; '
            + '; '.join(evidence_line(f) for f in found.evidence))
    return text[:DESCRIPTION_LIMIT]


def request_body(found: Plan, who: identity.Identity, session_id: str,
                 started: str) -> dict:
    """The documented body (categories.REPORT_DOC): names are
    case-sensitive."""
    extra = {identity.HOST_KEY: who.physical_host}
    if who.vm_id:
        extra['VmUniqueId'] = who.vm_id
    # the documented GPU fields (REPORT_DOC, "Resource.Hpc.Unhealthy.*
    # fields specific to GPUs"): where the health sample named the GPU
    gpu = found.finding.gpu or {}
    if gpu.get('serial'):
        extra['SerialNumber'] = str(gpu['serial'])
    if gpu.get('bus_id'):
        extra['Location'] = str(gpu['bus_id'])
    return {'properties': {
        'startDateTime': started,
        'reportedTimeUtc': utc_text(),
        'impactCategory': found.mapping.category,
        'impactDescription': description(found, session_id),
        'impactedResourceId': who.resource_id,
        'additionalProperties': extra,
    }}


def utc_text(when: float | None = None) -> str:
    """'2025-09-15T01:06:21Z', the docs' form of a time."""
    moment = dt.datetime.fromtimestamp(when, dt.timezone.utc) \
        if when is not None else dt.datetime.now(dt.timezone.utc)
    return moment.strftime('%Y-%m-%dT%H:%M:%SZ')


def _subscription(who: identity.Identity) -> str | None:
    chosen = settings.ghr_subscription()
    if chosen:
        return chosen
    if who.subscription:
        return who.subscription
    parts = (who.resource_id or '').split('/')
    return parts[2] if len(parts) > 2 and parts[1].lower() == \
        'subscriptions' else None


def limit_of(max_reports: int | None, node_count: int) -> int:
    return max_reports if max_reports is not None else max(
        1, int(node_count * DEFAULT_FRACTION))


def report(node_verdicts, session_id: str, started: str,
           max_reports: int | None, dry_run: bool, say,
           probe=identity.probe) -> dict:
    """Plan, check, and send (or print, with dry_run) the reports. Returns
    {'reports': [...], 'not_reported': [...], 'notes': [...]} for the
    summary; never raises for Azure's or a node's sake."""
    plans = plan(node_verdicts)
    result = {'reports': [], 'not_reported': [], 'notes': []}
    try:
        ledger.events()
    except ledger.LedgerError as error:
        note = f'nothing reported to Azure: {error}'
        say(note)
        result['notes'].append(note)
        result['not_reported'] += [{'node': p.node, 'why': note}
                                   for p in plans]
        return result
    for p in plans:
        if p.finding is None:
            result['not_reported'].append({'node': p.node,
                                           'why': p.why_not})
    ready = [p for p in plans if p.finding is not None]
    fresh = []
    for p in ready:
        already = ledger.open_for(p.node, p.mapping.category)
        if already:
            result['not_reported'].append({'node': p.node, 'why': (
                f"report {already['name']} ({p.mapping.category}) from "
                f"session {already.get('session_id')} is still open")})
        else:
            fresh.append(p)
    limit = limit_of(max_reports, len(node_verdicts))
    if len(fresh) > limit:
        note = (f'{len(fresh)} nodes to report is more than --max-reports '
                f'{limit}: nothing reported to Azure (a wrong reference or '
                'a broken partition must not send hosts to repair); check '
                'the references, or raise --max-reports')
        result['notes'].append(note)
        say(note)
        result['not_reported'] += [{'node': p.node, 'why': note}
                                   for p in fresh]
        return result
    for p in fresh:
        entry = _send_one(p, session_id, started, dry_run, say, probe)
        (result['reports'] if 'name' in entry else
         result['not_reported']).append(entry)
    for line in summary_lines(result):
        say(line)
    return result


def _unresolved_name(node: str, category: str) -> str | None:
    """The name of a report of this node and category whose answer was
    never known (lost, or the run stopped): sent again under that name."""
    return next((name for name, r in ledger.reports().items()
                 if r.get('node') == node and r.get('category') == category
                 and r.get('state') in (ledger.SENDING,
                                        impact_api.FAILED)), None)


def _send_one(p: Plan, session_id, started, dry_run, say, probe) -> dict:
    who = probe(p.node)
    if not who.physical_host or not who.resource_id:
        why = (f'{identity.HOST_KEY} and the VM id are required; '
               + '; '.join(who.problems or ['not known']))
        say(f'not reported to Azure: {p.node}: {why}')
        return {'node': p.node, 'why': why}
    subscription = _subscription(who)
    if not subscription:
        why = f'no subscription in the VM id {who.resource_id!r}'
        say(f'not reported to Azure: {p.node}: {why}')
        return {'node': p.node, 'why': why}
    name = _unresolved_name(p.node, p.mapping.category) or \
        report_name(session_id, p.node, p.finding)
    url = impact_api.impact_url(subscription, name)
    body = request_body(p, who, session_id, started)
    facts = {'name': name, 'node': p.node, 'partition': p.partition,
             'category': p.mapping.category,
             'category_source': p.mapping.source, 'session_id': session_id,
             'check': p.finding.check, 'metric': p.finding.metric,
             'device': p.finding.device, 'jobid': p.finding.jobid,
             'judged_record_id': p.finding.record_id,
             'impacted_resource_id': who.resource_id,
             'physical_host': who.physical_host,
             'subscription': subscription, 'url': url, 'request': body}
    if dry_run:
        say(f'would send: PUT {url}')
        say(json.dumps(body, indent=2))
        return {**facts, 'state': 'dry_run', 'detail': 'not sent (--dry-run)'}
    try:
        ledger.append({**facts, 'state': ledger.SENDING})
    except OSError as error:
        why = (f'the ledger {ledger.path()} cannot be written ({error}): '
               'nothing is sent that could not be kept')
        say(f'not reported to Azure: {p.node}: {why}')
        return {'node': p.node, 'why': why}
    answer = impact_api.call('PUT', url, body)
    state, detail = impact_api.outcome(answer)
    try:
        ledger.append({'name': name, 'state': state, 'detail': detail,
                       'answer': answer.as_dict()})
    except OSError as error:
        detail += (f'; the answer is not in the ledger ({error}): the next '
                   'run sends the report again under its name')
    verb = {impact_api.FILED: 'reported to Azure',
            impact_api.ALREADY_FILED: 'already reported to Azure'}.get(
        state, 'NOT reported to Azure')
    say(f'{verb}: {p.node} as {p.mapping.category} on physical host '
        f'{who.physical_host} (report {name}): {detail}')
    return {**facts, 'state': state, 'detail': detail,
            'answer': answer.as_dict()}


def rows(result: dict | None, session_id: str,
         summary_facility: str) -> list[dict]:
    """One store row per report sent (whatever Azure answered), so KQL
    shows what was reported when: a test of its own (ROW_TEST, so that no
    query takes it for a result of the check that failed, nor for a verdict
    about its row: no judged_record_id), informational, the report and
    the finding it is about in guest_health_report."""
    made = []
    for r in (result or {}).get('reports', []):
        if r.get('state') == 'dry_run':
            continue
        system, _, partition = r['partition'].partition(':')
        answer = r.get('answer') or {}
        made.append(row_schema.make_row({
            'TimeGenerated': row_schema.now_iso(),
            'record_id': str(uuid.uuid4()), 'session_id': session_id,
            'facility': summary_facility,
            'data_version': row_schema.DATA_VERSION,
            'check_tags': ['acceptance'],
            'cluster': builder.cluster_name(system),
            'check_system': system, 'check_partition': partition,
            'check_name': ROW_TEST, 'check_display_name': ROW_TEST,
            'check_perf_var': ROW_METRIC, 'device': r.get('device'),
            'check_perf_result': 'informational',
            'check_result': 'informational',
            'check_fail_reason': r['detail'],
            'check_jobid': r.get('jobid'),
            'check_job_nodelist': [r['node']],
            ROW_METRIC: {
                'name': r['name'], 'category': r['category'],
                'state': r['state'], 'http_status': answer.get('status'),
                'impacted_resource_id': r['impacted_resource_id'],
                'physical_host_name': r['physical_host'],
                'subscription': r['subscription'],
                'check': r['check'], 'metric': r.get('metric'),
                'judged_record_id': r.get('judged_record_id')},
        }))
    return made


def summary_lines(result: dict) -> list[str]:
    """The bad nodes not reported, each with why (the ones reported were
    said as they were sent)."""
    lines = [f"  {r['node']}: {r['why']}" for r in result['not_reported']]
    return ['not reported to Azure:'] + lines if lines else []
