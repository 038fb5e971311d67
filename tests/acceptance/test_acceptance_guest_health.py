"""`clusterproof acceptance --report-to-azure` for real on the sandbox:
sb-n3's STREAM replays a real output of a run throttled to 10 % of a CPU,
so it is bad and stays bad when re-measured (--confirm 1); each node tells
its VM id through a loopback metadata service and its physical host
through a KVP pool file of its own; the reports go to the loopback Impact
API through azure-identity's managed-identity path. Then the lifecycle:
follow up (Azure's insights say the host is out of service: deallocate),
and `--resume` takes the node back once it passes on another host."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from config.results import settings
from scripts.guest_health import ledger
from tests.support.acceptance_runs import (LOW_STREAM, NODES, STREAM_ONLY,
                                           acceptance, node_state, verdict_of)
from tests.support.helpers import REPO, stored_rows
from tests.support.loopback_imds import LoopbackImds
from tests.support.loopback_impact import SUB, kvp_pool, vm_id

def host_of(node):
    return f'GGBB9090{node[-1]}000'

@pytest.fixture
def azure_side(impact_api, tmp_path):
    """The five nodes as Azure sees them, and the environment that
    points acceptance at the loopback services."""
    computes = {n: {'resourceId': vm_id(n), 'subscriptionId': SUB,
                    'vmId': f'{i:08d}-aaaa-bbbb-cccc-dddddddddddd'}
                for i, n in enumerate(NODES, 1)}
    for node in NODES:
        (tmp_path / f'kvp-{node}').write_bytes(kvp_pool([
            ('PhysicalHostNameFullyQualified', host_of(node) + '.example'),
            ('PhysicalHostName', host_of(node))]))
    impact_api.onboarded.add(SUB)
    with LoopbackImds({}, computes) as imds:
        yield tmp_path, {**impact_api.env(),
               'REQUESTS_CA_BUNDLE': impact_api.ca_bundle,
               'SSL_CERT_FILE': impact_api.ca_bundle,
               settings.IMDS_COMPUTE_URL: imds.compute_url(),
               settings.KVP_POOL: str(tmp_path / 'kvp-%n')}

def test_a_confirmed_bad_node_is_reported_followed_and_taken_back(
        sandbox_env, azure_side, impact_api, monkeypatch):
    kvp_dir, settings = azure_side
    env = {**sandbox_env, **settings,
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N3': str(LOW_STREAM)}
    result, summary = acceptance(
        env, '--system', 'sandbox', '--partition', 'hbv4', *STREAM_ONLY,
        '--confirm', '1', '--report-to-azure', '--drain',
        '--', '-S', 'array_size=20000000')
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert verdict_of(summary)['sb-n3'] == 'bad'
    assert [v for n, v in verdict_of(summary).items() if n != 'sb-n3'] == \
        ['good'] * 4
    # exactly one report, for sb-n3, with the mapped category, its VM id,
    # its physical host and the evidence
    [put] = impact_api.puts
    assert put.status == 200
    assert put.token_resource == 'https://management.azure.com'
    props = put.body['properties']
    assert props['impactCategory'] == 'Resource.Hpc.Unhealthy.CPUPerformance'
    assert props['impactedResourceId'] == vm_id('sb-n3')
    assert props['additionalProperties']['PhysicalHostName'] == \
        host_of('sb-n3')
    session_id = summary['session_id']
    # stream_c_omp2_20M_cpu_quota_10pct.out line 30: "Triad: 1190.4 ..."
    # (the best rate column); the sandbox reference is 8000 MB/s
    # (tests/support/data/acceptance/references)
    for evidence in (session_id, 'triad_bw=1190.4 MB/s against 8000 MB/s',
                     'failed 1 re-measurement(s) too'):
        assert evidence in props['impactDescription']
    assert 'reported to Azure: sb-n3 as Resource.Hpc.Unhealthy.' \
        'CPUPerformance' in out
    # then drained, as before
    assert 'drained sb-n3' in out and node_state('sb-n3').startswith('drain')
    # the summary, the ledger and the store say so
    [sent] = summary['azure_reports']['reports']
    assert sent['state'] == 'filed' and sent['node'] == 'sb-n3'
    monkeypatch.setenv('CLUSTERPROOF_HOME', env['CLUSTERPROOF_HOME'])
    assert list(ledger.open_reports()) == [sent['name']]
    rows = [r for r in stored_rows(Path(env['CLUSTERPROOF_HOME']))
            if r['check_perf_var'] == 'guest_health_report']
    assert len(rows) == 1
    assert rows[0]['guest_health_report']['name'] == sent['name']
    assert rows[0]['guest_health_report']['physical_host_name'] == \
        host_of('sb-n3')
    assert rows[0]['check_job_nodelist'] == ['sb-n3']
    # the health sampler read each node's own KVP pool too (the fingerprint
    # keeps the fully qualified name)
    hosts = {r['check_job_nodelist'][0]: r['physical_host']
             for r in stored_rows(Path(env['CLUSTERPROOF_HOME']))
             if r['check_perf_var'] == 'triad_bw'}
    assert hosts == {n: host_of(n) + '.example' for n in NODES}
    assert not any(t in json.dumps(summary) for t in impact_api.tokens)
    # KQL's latest verdict of sb-n3's STREAM is still its failure; the
    # report is a line of its own
    latest = subprocess.run(
        [sys.executable, str(REPO / 'scripts' / 'clusterproof'), 'query',
         'latest_by_node', '--json'], env=env, cwd=str(REPO),
        capture_output=True, text=True, timeout=300)
    assert latest.returncode == 0, latest.stderr
    verdicts = {(r['node'], r['check_name']): r['check_result']
                for r in json.loads(latest.stdout)
                if r['node'] == 'sb-n3'}
    assert verdicts[('sb-n3', 'StreamCheck')] == 'fail'
    assert verdicts[('sb-n3', 'GuestHealthReport')] == 'informational'

    # follow up: Azure took the host out of service, the operator is told
    # to deallocate the VM
    impact_api.insights[sent['name']] = [insight('AcknowledgedUnhealthy',
                                                 False, '08:00'),
                                         insight('NodeRemovedFromService',
                                                 True, '09:00')]
    follow = subprocess.run(
        [sys.executable, str(REPO / 'scripts' / 'clusterproof'),
         'azure-reports', '--follow-up'], env=env, cwd=str(REPO),
        capture_output=True, text=True, timeout=120)
    assert follow.returncode == 0, follow.stdout + follow.stderr
    assert f'az vm deallocate --ids {vm_id("sb-n3")}' in follow.stdout
    assert 'NodeRemovedFromService' in follow.stdout
    [got] = [r for r in impact_api.requests if r.method == 'GET']
    assert got.path.endswith(f"/workloadImpacts/{sent['name']}/insights")
    assert got.api_version == '2025-01-01-preview'

    # the VM came back on another host and passes: --resume resumes it and
    # closes its report
    (kvp_dir / 'kvp-sb-n3').write_bytes(kvp_pool([
        ('PhysicalHostName', 'GGBB90904999')]))
    env.pop('CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N3')
    result, summary = acceptance(
        env, '--system', 'sandbox', '--partition', 'hbv4', *STREAM_ONLY,
        '--resume', '--', '-S', 'array_size=20000000')
    assert result.returncode == 0, result.stdout + result.stderr
    assert summary['azure_reports']['closed'] == [sent['name']]
    assert f"report {sent['name']} closed: sb-n3 passed on physical host " \
        f"GGBB90904999 (reported: {host_of('sb-n3')})" in result.stdout
    assert ledger.open_reports() == {}
    assert node_state('sb-n3') == 'idle'
    assert len(impact_api.puts) == 1


def insight(code, terminal, hour):
    """An insight as the report page's example answer shows one."""
    return {'name': code, 'properties': {
        'additionalDetails': {'statusCode': code,
                              'terminalInsight': terminal},
        'category': 'MitigationAction', 'status': 'Resolved',
        'eventTime': f'2026-12-05T{hour}:00Z',
        'content': {'title': code}}}

