"""After a report: what Azure did (its insights) and what the operator does
next; and closing a report once its node is healthy again.

Azure answers a report with a sequence of insights; the one whose
additionalDetails.terminalInsight is true is the last, and it says whether
the VM must be deallocated (REPORT_DOC, "Query workload impact insights";
FAQ_DOC). When the repair is planned, Azure waits for the VM to be
deallocated (up to 30 days, then it tries to move it itself), so the
operator deallocates it, starts it again on another host, and runs
`clusterproof acceptance --resume`: a node that passes there on another
physical host is resumed and its report closed in the ledger.

No "healthy again" report is sent. The categories page (categories.
CATEGORIES_DOC) lists Resource.Hpc.Reset ("Request a refresh of the node
health state") and no Resource.Hpc.Healthy, which only the report page's
"Healthy node" example shows; and the report named the old physical host
(PhysicalHostName), which Azure took for repair: the new host was never
reported, so there is nothing of it to reset."""
from __future__ import annotations

from . import identity, impact_api, ledger
from .categories import REPORT_DOC

FAQ_DOC = ('https://learn.microsoft.com/azure/azure-impact-reporting/'
           'guest-health-faq')
REMOVED = 'NodeRemovedFromService'


def latest_insight(answer_body) -> dict | None:
    """The newest insight of a list answer ({"value": [...]}) as
    {status_code, terminal, status, title, event_time}; None if none."""
    items = answer_body.get('value') if isinstance(answer_body, dict) \
        else None
    found = []
    for item in items or []:
        props = item.get('properties') if isinstance(item, dict) else None
        if not isinstance(props, dict):
            continue
        details = props.get('additionalDetails') or {}
        content = props.get('content') or {}
        found.append({'status_code': details.get('statusCode'),
                      'terminal': details.get('terminalInsight') is True,
                      'status': props.get('status'),
                      'title': content.get('title'),
                      'event_time': str(props.get('eventTime') or '')})
    if not found:
        return None
    return max(found, key=lambda i: (i['terminal'], i['event_time']))


def next_step(report: dict, insight: dict | None) -> str:
    """What the operator does now, in one line."""
    vm = report.get('impacted_resource_id') or 'the VM'
    if insight is None:
        return 'Azure has published no insight yet: follow up again later'
    what = insight['status_code'] or insight['status'] or 'an insight'
    if not insight['terminal']:
        return f'Azure is on it ({what}, not final): follow up again later'
    if insight['status_code'] == REMOVED:
        return (f'Azure took the host out of service ({what}): deallocate '
                f'the VM (az vm deallocate --ids {vm}) so that it starts '
                'on another host, start it, then run `clusterproof '
                f'acceptance --resume` ({FAQ_DOC})')
    return (f'Azure ended with {what}: read the insight ({REPORT_DOC}); '
            'the report stays open until the node passes on another host')


def follow(say) -> list[dict]:
    """Read the insights of every open report and say what to do."""
    found = []
    for name, report in sorted(ledger.open_reports().items()):
        url = impact_api.insights_url(report['subscription'], name)
        answer = impact_api.call('GET', url)
        if answer.status != 200:
            _, detail = impact_api.outcome(answer)
            say(f"{report['node']}: report {name}: insights not read: "
                f'{detail}')
            found.append({'name': name, 'node': report['node'],
                          'error': detail})
            continue
        insight = latest_insight(answer.body)
        step = next_step(report, insight)
        ledger.append({'name': name, 'state': ledger.FOLLOWED,
                       'insight': insight, 'next_step': step})
        say(f"{report['node']}: report {name} ({report['category']}, "
            f"physical host {report['physical_host']}): {step}")
        found.append({'name': name, 'node': report['node'],
                      'insight': insight, 'next_step': step})
    if not found:
        say('no open Guest Health Report in the ledger '
            f'({ledger.path()})')
    return found


def close_passing(node_verdicts, targets, reservation: str | None,
                  session_id: str, say, probe=identity.probe) -> dict:
    """In --resume: a node with an open report that is good now is closed
    when it runs on another physical host than the one reported."""
    result = {'reports': [], 'closed': [], 'kept_open': []}
    try:
        opened = ledger.open_reports()
    except ledger.LedgerError as error:
        say(f'no Guest Health Report closed: {error}')
        return result
    good = {v.node for v in node_verdicts
            if (v.partition, v.node) in targets and v.verdict == 'good'}
    for name, report in sorted(opened.items()):
        if report.get('node') not in good:
            continue
        now = probe(report['node'], reservation)
        if now.physical_host and now.physical_host != \
                report.get('physical_host'):
            ledger.append({'name': name, 'state': ledger.CLOSED,
                           'closed_by_session': session_id,
                           'physical_host_now': now.physical_host})
            say(f"report {name} closed: {report['node']} passed on physical "
                f"host {now.physical_host} (reported: "
                f"{report.get('physical_host')})")
            result['closed'].append(name)
        else:
            why = (f'still on the reported physical host '
                   f'{report.get("physical_host")}' if now.physical_host
                   else 'its physical host is not known: '
                   + '; '.join(now.problems))
            say(f"report {name} stays open: {report['node']} passes but is "
                f'{why}; deallocate the VM so it moves')
            result['kept_open'].append(name)
    return result
