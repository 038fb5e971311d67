"""`clusterproof acceptance --report-to-azure` for real on the sandbox:
sb-n3's STREAM replays a real output of a run throttled to 10 % of a CPU,
so it is bad and stays bad when re-measured (--confirm 1); each node tells
its VM id through a loopback metadata service and its physical host
through a KVP pool file of its own; the reports go to the loopback Impact
API through azure-identity's managed-identity path."""
import json
from pathlib import Path

import pytest

from scripts.guest_health import identity, ledger
from tests.support.acceptance_runs import (LOW_STREAM, NODES, STREAM_ONLY,
                                           acceptance, node_state, verdict_of)
from tests.support.helpers import stored_rows
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
        yield {**impact_api.env(),
               'REQUESTS_CA_BUNDLE': impact_api.ca_bundle,
               'SSL_CERT_FILE': impact_api.ca_bundle,
               identity.IMDS_URL_SETTING: imds.compute_url(),
               identity.KVP_SETTING: str(tmp_path / 'kvp-%n')}

def test_a_confirmed_bad_node_is_reported_once_then_drained(
        sandbox_env, azure_side, impact_api, monkeypatch):
    env = {**sandbox_env, **azure_side,
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
    # stream_c_omp2_20M_cpu_quota_10pct.out: "Triad: 1190.4 ..." (the
    # best rate column); the sandbox reference is 8000 MB/s
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
    assert not any(t in json.dumps(summary) for t in impact_api.tokens)
