"""Guest Health Reporting (scripts/guest_health): which bad node is
reported to Azure, under which category, and what Azure's answers do, with
the real azure-identity managed-identity path and requests against the
loopback Impact API (tests/support/loopback_impact.py), and each node's
identity read by the real probe script from a loopback metadata service
and a KVP pool file."""
import subprocess

import pytest

from scripts.acceptance.findings import (FAIL, NOT_MEASURED, PUBLISHED,
                                         Finding)
from scripts.acceptance.verdicts import NodeVerdict
from scripts.guest_health import categories, identity, ledger, reporting
from scripts.guest_health import impact_api as api
from tests.support.loopback_imds import LoopbackImds
from tests.support.loopback_impact import (CATEGORIES, LOST, SUB, kvp_pool,
                                         vm_id)

SESSION = '20261205T080000Z-abcdef01'
STARTED = '2026-12-05T08:00:00Z'


@pytest.fixture
def nodes(tmp_path, monkeypatch):
    """sb-n1..sb-n3 as Azure sees them: a loopback metadata service and a
    KVP pool file per node (sb-n3's pool has no PhysicalHostName)."""
    computes = {n: {'resourceId': vm_id(n), 'subscriptionId': SUB,
                    'vmId': f'0000000{i}-aaaa-bbbb-cccc-dddddddddddd',
                    'location': 'eastus', 'vmSize': 'Standard_HB176rs_v4'}
                for i, n in enumerate(('sb-n1', 'sb-n2', 'sb-n3'), 1)}
    for i, node in enumerate(computes, 1):
        pairs = [('HostName', 'hpc-host'),
                 ('PhysicalHostNameFullyQualified',
                  f'GGBB9090447{i}.fabric.example')]
        if node != 'sb-n3':
            pairs.append(('PhysicalHostName', f'GGBB9090447{i}'))
        (tmp_path / f'kvp-{node}').write_bytes(kvp_pool(pairs))
    monkeypatch.setenv('CLUSTERPROOF_KVP_POOL', str(tmp_path / 'kvp-%n'))
    with LoopbackImds({}, computes) as imds:
        monkeypatch.setenv('CLUSTERPROOF_IMDS_COMPUTE_URL', imds.compute_url())
        yield imds


def probe_here(node):
    """The probe step's script run on this host (the nodes' host), as srun
    would run it on the node."""
    out = subprocess.run(['sh', '-c', identity.probe_script(node)],
                         capture_output=True, text=True, timeout=60).stdout
    return identity.parse_probe(node, out)


@pytest.fixture(autouse=True)
def fresh_credential_and_home(monkeypatch, tmp_path):
    monkeypatch.setattr(api, '_credential', None)
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path / 'home'))


def bad(node, *findings, partition='sandbox:hbv4'):
    return NodeVerdict(node, partition, 'bad', list(findings))


def stream_fail(node, confirmations=('fail',), **more):
    return Finding(node, 'sandbox:hbv4', 'StreamCheck', FAIL,
                   metric='triad_bw', value=1190.4, unit='MB/s',
                   reference=8000.0, basis=PUBLISHED, jobid='42',
                   reason='below the lower bound 8000',
                   confirmations=list(confirmations), **more)


def send(verdicts, *, max_reports=None, dry_run=False):
    said = []
    result = reporting.report(verdicts, SESSION, STARTED, max_reports,
                              dry_run, said.append, probe=probe_here)
    return result, said


# --- which finding maps to which documented category ------------------------

def test_every_mapped_category_is_a_documented_one():
    # the stand-in's list is written from the docs on its own
    assert categories.DOCUMENTED == set(CATEGORIES)
    for mapping in categories.MAPPINGS:
        assert mapping.category in categories.DOCUMENTED
        assert mapping.source.startswith('https://')
    assert categories.mapping_for('xid_error', 79).category == \
        'Resource.Hpc.Unhealthy.XID79FallenOffBus'
    assert categories.mapping_for('xid_error', 13).category == \
        'Resource.Hpc.Unhealthy.GpuXIDError'
    assert categories.mapping_for('port_state').category == \
        'Resource.Hpc.Unhealthy.IBPortDown'
    assert categories.mapping_for('pcie_link_width') is None


def test_only_a_confirmed_mapped_failure_of_a_bad_node_is_planned():
    health = Finding('sb-n2', 'sandbox:hbv4', 'StreamCheck', FAIL,
                     reason='health: mlx5_ib0/1: link_downed +1 during the '
                     'test', kind='link_downed', device='mlx5_ib0/1',
                     value=1, reference=0, confirmations=['fail'])
    pcie = Finding('sb-n4', 'sandbox:hbv4', 'StreamCheck', FAIL,
                   kind='pcie_link_width', reason='health: GPU 0 x8',
                   confirmations=['fail'])
    plans = {p.node: p for p in reporting.plan([
        bad('sb-n1', stream_fail('sb-n1')),
        bad('sb-n2', stream_fail('sb-n2'), health),
        bad('sb-n3', stream_fail('sb-n3', confirmations=())),
        bad('sb-n5', stream_fail('sb-n5', confirmations=('fail', 'pass'))),
        bad('sb-n4', pcie),
        NodeVerdict('sb-n6', 'sandbox:hbv4', 'not_measured', [Finding(
            'sb-n6', 'sandbox:hbv4', 'StreamCheck', NOT_MEASURED)]),
    ])}
    assert set(plans) == {'sb-n1', 'sb-n2', 'sb-n3', 'sb-n4', 'sb-n5'}
    assert plans['sb-n1'].mapping.category.endswith('.CPUPerformance')
    # the more specific of two confirmed failures is the report's category
    assert plans['sb-n2'].mapping.category.endswith('.IBPortFlapping')
    assert plans['sb-n2'].finding.device == 'mlx5_ib0/1'
    assert plans['sb-n3'].finding is None
    assert 'measured once' in plans['sb-n3'].why_not
    assert 'pass' in plans['sb-n5'].why_not
    assert "no Guest Health Reporting category fits 'pcie_link_width'" in \
        plans['sb-n4'].why_not


def test_a_failure_every_node_shares_is_never_planned():
    # the same confirmed failure on all five nodes: acceptance's own
    # the common-mode rule makes it one partition finding, no bad node
    from scripts.acceptance import compare, verdicts
    nodes = [f'sb-n{i}' for i in range(1, 6)]
    findings = [stream_fail(node) for node in nodes]
    findings += compare.shared_failures(findings)
    judged = verdicts.node_verdicts(findings, {'sandbox:hbv4': {
        node: 'idle' for node in nodes}})
    assert {v.verdict for v in judged} == {'good'}
    assert [f.scope for f in verdicts.partition_findings(findings)] == \
        ['common']
    assert reporting.plan(judged) == []
    # and a set-aside failure never counts, whatever the node's verdict
    assert reporting.plan([bad('sb-n1', findings[0])])[0].finding is None


def test_the_probe_reads_the_vm_id_and_the_short_physical_host(nodes):
    found = probe_here('sb-n2')
    assert found.resource_id == vm_id('sb-n2')
    assert found.subscription == SUB
    assert found.vm_id == '00000002-aaaa-bbbb-cccc-dddddddddddd'
    # PhysicalHostName, not PhysicalHostNameFullyQualified
    assert found.physical_host == 'GGBB90904472'
    assert found.problems == []
    missing = probe_here('sb-n3')
    assert missing.physical_host is None
    assert 'has no PhysicalHostName' in missing.problems[0]
    assert nodes.requests[0]['metadata'] == 'true'


def test_a_probe_that_reached_nothing_says_what_is_missing():
    found = identity.parse_probe('n1', 'compute-error: no curl on the node\n'
                                 'kvp-error: /x is not readable\n')
    assert found.problems == ['metadata service: no curl on the node',
                              'KVP pool: /x is not readable']


# --- against the loopback Impact API ----------------------------------------

def test_a_confirmed_bad_node_is_reported_once_with_its_evidence(
        nodes, impact_api):
    impact_api.onboarded.add(SUB)
    result, said = send([bad('sb-n1', stream_fail('sb-n1'))])
    [put] = impact_api.puts
    assert put.status == 200 and put.token_resource == \
        'https://management.azure.com'
    assert put.api_version == '2023-02-01-preview'
    props = put.body['properties']
    assert props['impactCategory'] == 'Resource.Hpc.Unhealthy.CPUPerformance'
    assert props['impactedResourceId'] == vm_id('sb-n1')
    assert props['additionalProperties'] == {
        'PhysicalHostName': 'GGBB90904471',
        'VmUniqueId': '00000001-aaaa-bbbb-cccc-dddddddddddd'}
    assert props['startDateTime'] == STARTED
    for evidence in (SESSION, 'triad_bw=1190.4 MB/s against 8000 MB/s '
                     '(published)', 'failed 1 re-measurement(s) too',
                     'job 42'):
        assert evidence in props['impactDescription']
    [report] = result['reports']
    assert report['state'] == 'filed'
    assert 'reported to Azure: sb-n1 as Resource.Hpc.Unhealthy.' \
        'CPUPerformance on physical host GGBB90904471' in said[0]
    # kept in the ledger with Azure's answer, and open
    kept = ledger.reports()[report['name']]
    assert kept['state'] == 'filed' and kept['answer']['status'] == 200
    assert kept['request'] == put.body
    assert list(ledger.open_reports()) == [report['name']]
    # no token in the ledger
    assert not any(token in ledger.path().read_text()
                   for token in impact_api.tokens)
    # the row for the store
    [row] = reporting.rows(result, SESSION, 'clusterproof-acceptance')
    assert row['facility'] == 'clusterproof-acceptance'
    assert row['check_perf_var'] == 'guest_health_report'
    assert row['check_job_nodelist'] == ['sb-n1']
    assert row['guest_health_report']['name'] == report['name']
    assert row['guest_health_report']['physical_host_name'] == 'GGBB90904471'
    # a test of its own: no query takes it for a StreamCheck result, nor
    # for a verdict about the failing row
    assert row['check_name'] == 'GuestHealthReport'
    assert row['judged_record_id'] is None
    assert row['guest_health_report']['check'] == 'StreamCheck'
    # a later run does not report the node again while the report is open
    again, _ = send([bad('sb-n1', stream_fail('sb-n1'))])
    assert again['reports'] == [] and len(impact_api.puts) == 1
    assert 'is still open' in again['not_reported'][0]['why']


def test_a_lost_answer_and_a_retry_give_exactly_one_report(nodes, impact_api):
    impact_api.onboarded.add(SUB)
    impact_api.answers += [LOST, 503]
    result, _ = send([bad('sb-n1', stream_fail('sb-n1'))])
    statuses = [r.status for r in impact_api.puts]
    assert statuses == [LOST, 503, 409]
    assert len({r.path for r in impact_api.puts}) == 1
    assert len(impact_api.impacts) == 1
    assert result['reports'][0]['state'] == 'already_filed'


def test_throttling_is_retried_with_its_retry_after(nodes, impact_api):
    impact_api.onboarded.add(SUB)
    impact_api.answers += [429, 500]
    result, _ = send([bad('sb-n1', stream_fail('sb-n1'))])
    assert [r.status for r in impact_api.puts] == [429, 500, 200]
    assert result['reports'][0]['answer']['attempts'] == 3


def test_a_missing_role_and_an_unknown_category_are_named(nodes, impact_api):
    impact_api.onboarded.add(SUB)
    impact_api.role_granted = False
    result, said = send([bad('sb-n1', stream_fail('sb-n1'))])
    report = result['reports'][0]
    assert report['state'] == 'refused'
    assert 'HTTP 403' in report['detail']
    assert '"Azure Impact Reporter" role' in report['detail']
    assert 'Microsoft.Impact' in report['detail']
    assert said[0].startswith('NOT reported to Azure: sb-n1')
    assert len(impact_api.puts) == 1     # a refusal is not retried

    impact_api.role_granted = True
    impact_api.categories.remove('Resource.Hpc.Unhealthy.CPUPerformance')
    result, _ = send([bad('sb-n2', stream_fail('sb-n2'))])
    report = result['reports'][0]
    assert report['state'] == 'refused'
    assert 'HTTP 400' in report['detail'] and \
        'is not an allowed category' in report['detail']
    assert ledger.open_reports() == {}


def test_dry_run_prints_the_request_and_sends_nothing(nodes, impact_api):
    impact_api.onboarded.add(SUB)
    result, said = send([bad('sb-n1', stream_fail('sb-n1'))], dry_run=True)
    assert impact_api.requests == [] and impact_api.token_resources == []
    assert said[0].startswith(f'would send: PUT {impact_api.base_url}/'
                              f'subscriptions/{SUB}/providers/'
                              'Microsoft.Impact/workloadImpacts/')
    assert '"PhysicalHostName": "GGBB90904471"' in said[1]
    assert result['reports'][0]['state'] == 'dry_run'
    assert not ledger.path().exists()


def test_more_nodes_than_max_reports_reports_nothing(nodes, impact_api):
    impact_api.onboarded.add(SUB)
    result, said = send([bad('sb-n1', stream_fail('sb-n1')),
                         bad('sb-n2', stream_fail('sb-n2'))], max_reports=1)
    assert impact_api.requests == []
    assert '2 nodes to report is more than --max-reports 1' in said[0]
    assert {r['node'] for r in result['not_reported']} == {'sb-n1', 'sb-n2'}


def test_a_node_without_physical_host_name_is_not_reported(nodes,
                                                             impact_api):
    impact_api.onboarded.add(SUB)
    result, said = send([bad('sb-n3', stream_fail('sb-n3'))])
    assert impact_api.requests == []
    [left] = result['not_reported']
    assert 'PhysicalHostName and the VM id are required' in left['why']
    assert 'has no PhysicalHostName' in left['why']


def test_a_report_whose_answer_never_came_is_sent_again_under_its_name(
        nodes, impact_api):
    impact_api.onboarded.add(SUB)
    impact_api.answers += [LOST, 503, 503, 503]
    first, _ = send([bad('sb-n1', stream_fail('sb-n1'))])
    [report] = first['reports']
    assert report['state'] == 'failed' and 'the next run tries again' in \
        report['detail']
    # a later session: the same name again, and Azure's 409 means filed
    later = reporting.report([bad('sb-n1', stream_fail('sb-n1'))],
                             '20261206T080000Z-00000002', STARTED, None,
                             False, lambda line: None, probe=probe_here)
    assert later['reports'][0]['name'] == report['name']
    assert later['reports'][0]['state'] == 'already_filed'
    assert [r.status for r in impact_api.puts] == [LOST, 503, 503, 503, 409]
    assert len(impact_api.impacts) == 1
    assert list(ledger.open_reports()) == [report['name']]


def test_what_the_operator_is_told_from_the_insights():
    from scripts.guest_health import follow_up
    report = {'impacted_resource_id': vm_id('sb-n1')}
    assert 'no insight yet' in follow_up.next_step(report, None)
    # the report page's example answer: an acknowledgement, then the final
    # NodeRemovedFromService
    answer = {'value': [
        {'properties': {'eventTime': '2025-06-15T04:00:00.009223Z',
                        'additionalDetails': {
                            'statusCode': 'AcknowledgedUnhealthy',
                            'terminalInsight': False}}},
        {'properties': {'eventTime': '2025-07-15T04:00:00.009223Z',
                        'additionalDetails': {
                            'statusCode': 'NodeRemovedFromService',
                            'terminalInsight': True}}}]}
    latest = follow_up.latest_insight(answer)
    assert latest['status_code'] == 'NodeRemovedFromService'
    step = follow_up.next_step(report, latest)
    assert f'az vm deallocate --ids {vm_id("sb-n1")}' in step
    acknowledged = follow_up.latest_insight({'value': answer['value'][:1]})
    assert 'not final' in follow_up.next_step(report, acknowledged)
    assert follow_up.latest_insight({'value': []}) is None


def test_a_node_passing_on_the_reported_host_keeps_its_report(nodes,
                                                              impact_api):
    from scripts.guest_health import follow_up
    impact_api.onboarded.add(SUB)
    first, _ = send([bad('sb-n1', stream_fail('sb-n1'))])
    good = NodeVerdict('sb-n1', 'sandbox:hbv4', 'good', [])
    said = []
    kept = follow_up.close_passing(
        [good], {('sandbox:hbv4', 'sb-n1')}, None, 'later', said.append,
        probe=lambda node, reservation: probe_here(node))
    assert kept['kept_open'] == [first['reports'][0]['name']]
    assert 'still on the reported physical host GGBB90904471' in said[0]
    assert list(ledger.open_reports()) == kept['kept_open']


def test_nothing_is_sent_when_the_ledger_cannot_be_read_or_written(
        nodes, impact_api, monkeypatch):
    impact_api.onboarded.add(SUB)
    home = ledger.path().parents[1]
    home.mkdir(parents=True)
    (home / 'azure_reports').write_text('a file where the folder goes')
    result, said = send([bad('sb-n1', stream_fail('sb-n1'))])
    assert impact_api.requests == []
    [left] = result['not_reported']
    assert 'cannot be read' in left['why']
    assert said[0].startswith('nothing reported to Azure: the ledger')
    # readable but not writable: nothing is sent either
    (home / 'azure_reports').unlink()
    (home / 'azure_reports').mkdir()
    monkeypatch.setattr(ledger.os, 'open', _refuse)
    result, said = send([bad('sb-n1', stream_fail('sb-n1'))])
    assert impact_api.requests == []
    assert 'cannot be written' in result['not_reported'][0]['why']


def _refuse(*args, **kwargs):
    raise OSError(28, 'No space left on device')


def test_without_an_identity_nothing_is_filed_and_it_says_why(
        nodes, impact_api, monkeypatch):
    impact_api.onboarded.add(SUB)
    monkeypatch.setenv('IDENTITY_HEADER', 'not-the-one-it-expects')
    for name in ('AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_CLIENT_SECRET'):
        monkeypatch.delenv(name, raising=False)
    result, said = send([bad('sb-n1', stream_fail('sb-n1'))])
    report = result['reports'][0]
    assert report['state'] == 'refused'
    assert report['detail'].startswith('no Azure token for '
                                       'https://management.azure.com/.default')
    assert impact_api.puts == []


def test_a_gpu_finding_names_the_gpu_in_the_documented_fields(nodes,
                                                              impact_api):
    impact_api.onboarded.add(SUB)
    # what the health assessment says of an XID 79 (checks/health/assessment.py)
    xid = Finding('sb-n2', 'sandbox:ndv5', 'NcclSingleNode', FAIL,
                  kind='xid_error', device='gpu3', value=79,
                  reason='health: GPU 3 XID 79: NVRM: Xid (PCI:0000:9b:00): '
                  '79, GPU has fallen off the bus.',
                  gpu={'index': 3, 'bus_id': '00000000:9B:00.0',
                       'serial': '1654922009876'},
                  confirmations=['fail'])
    result, _ = send([bad('sb-n2', xid, partition='sandbox:ndv5')])
    [put] = impact_api.puts
    props = put.body['properties']
    assert props['impactCategory'] == \
        'Resource.Hpc.Unhealthy.XID79FallenOffBus'
    assert props['additionalProperties'] == {
        'PhysicalHostName': 'GGBB90904472',
        'VmUniqueId': '00000002-aaaa-bbbb-cccc-dddddddddddd',
        'SerialNumber': '1654922009876', 'Location': '00000000:9B:00.0'}
    assert 'GPU 3 (bus id 00000000:9B:00.0, serial 1654922009876)' in \
        props['impactDescription']
    # the GPU checks of issues 38 and 39 map too
    for check, category in (('GpuInventory', 'HpcMissingGpu'),
                            ('GpuDiag', 'HpcGpuDcgmDiagFailure'),
                            ('GpuMemoryBandwidth', 'GPUMemoryBWFailure')):
        assert categories.mapping_for(check).category == \
            f'Resource.Hpc.Unhealthy.{category}'


def test_azure_reports_lists_the_ledger(nodes, impact_api, capsys):
    from scripts.cli import main as cli
    assert cli.main(['azure-reports']) == 0
    assert capsys.readouterr().out.startswith('no Guest Health Report sent')
    impact_api.onboarded.add(SUB)
    result, _ = send([bad('sb-n1', stream_fail('sb-n1'))])
    assert cli.main(['azure-reports']) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line.split()[1:] == [
        'sb-n1', 'Resource.Hpc.Unhealthy.CPUPerformance', 'host',
        'GGBB90904471', 'filed', result['reports'][0]['name']]
