"""The sandbox tells noise from a fault, for real: `clusterproof
acceptance` runs HPCC (smoke size, HpccNode alone) on the five sandbox
nodes, one node after the other (they share two cores:
config/systems/sandbox.py).

- Healthy, no node is bad, and the run says how many were not judged.
- With sb-n3's slurmd (so every job step it starts) in a cgroup capped at a
  quarter of a CPU, sb-n3 is bad on a primary metric (HPL), confirmed when
  measured again alone (twice: CONFIRM below), and no other node is bad.
  The same run files its Azure Guest Health Report: each node tells its VM
  id through a loopback metadata service and its physical host through a
  KVP pool file of its own; the report goes to the loopback Impact API
  through azure-identity's managed-identity path. Then the lifecycle:
  follow up (Azure's insights say the host is out of service: deallocate),
  and `--resume` takes the node back once it passes on another host.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from config.results import settings
from scripts.cli import sandbox
from scripts.guest_health import ledger
from tests.support.acceptance_runs import (NODES, STREAM_ONLY, acceptance,
                                           node_state, verdict_of)
from tests.support.helpers import REPO, stored_rows
from tests.support.loopback_imds import LoopbackImds
from tests.support.loopback_impact import SUB, kvp_pool, vm_id

HPCC = ['--system', 'sandbox', '--partition', 'hbv4',
        '--checks', 'checks/cpu/hpcc.py', '--exclude', 'HpccTwoNodes']
# Two confirmations, not one. The five nodes share the two cores of one VM,
# whose HPL dips 10-35 % now and then (3 of 25 back-to-back runs on a
# quiet host): a healthy node dipped in its first run and again beside its
# controls in one CI run, and was confirmed bad. A third dip in a row is
# far rarer; the capped node fails every attempt.
CONFIRM = ['--confirm', '2']
CAPPED = 'sb-n3'
# A quarter of a CPU for the node's two ranks, where a healthy node has two
# CPUs: its HPL runs at about an eighth of its peers' (the issue's tenth
# took twice as long for the same verdict).
CAP_CPUS = 0.25
#: verdicts that blame no node (scripts/acceptance/session.py)
NOT_BAD = ('good', 'flaky', 'not_judged')


def counts(out):
    """The node counts of acceptance's count line, by verdict."""
    line = re.search(r'^\d+ node\(s\): (.*?);', out, re.M).group(1)
    return {verdict: int(n) for n, verdict in
            (part.split(' ', 1) for part in line.split(', '))}


def test_a_healthy_sandbox_has_no_bad_node(sandbox_env):
    result, summary = acceptance(sandbox_env, *HPCC, *CONFIRM)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    found = counts(out)
    assert found['bad'] == 0 and found['suspect'] == 0, out
    # printed, and said why: a node goes unjudged only where its peers
    # spread beyond the rule's limit (15 %: scripts/comparison/peers.py). On a
    # quiet host none do; a busy 2-core host often does (CI's: 5 of 5).
    # That noise is never a fault: a node it flags is measured again beside
    # controls and ends flaky (the capped test shows the rule still judges)
    assert 'not judged' in found, out
    spreads = re.findall(r'^  \S+ HpccNode \S+: not judged by peers: \d+ '
                         r'peers, spread ([\d.]+)%$', out, re.M)
    assert len(spreads) >= found['not judged'], out
    assert all(float(spread) >= 15 for spread in spreads), out
    assert set(verdict_of(summary).values()) <= set(NOT_BAD)
    assert summary['drain'] == []


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


def test_a_capped_node_is_bad_confirmed_reported_and_taken_back(
        slurm_sandbox, sandbox_env, azure_side, impact_api, monkeypatch):
    kvp_dir, azure = azure_side
    env = {**sandbox_env, **azure}
    with sandbox.node_cpu_cap(slurm_sandbox.dir, CAPPED, CAP_CPUS):
        result, summary = acceptance(env, *HPCC, *CONFIRM,
                                     '--report-to-azure', '--drain')
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    verdicts = verdict_of(summary)
    assert verdicts[CAPPED] == 'bad', out
    assert {n: v for n, v in verdicts.items() if v not in NOT_BAD} == \
        {CAPPED: 'bad'}, out
    # bad on a primary metric (HpccNode judges HPL and StarSTREAM only),
    # by its peers, and confirmed: measured again alone, it failed again
    [bad] = [n for n in summary['nodes'] if n['node'] == CAPPED]
    failed = [f for f in bad['findings']
              if f['verdict'] == 'fail' and not f['set_aside']]
    # (a quarter of a CPU may slow its STREAM too: a true finding as well)
    hpl = ('HpccNode', 'HPL_Tflops', 'peers')
    found = {(f['check'], f['metric'], f['basis']) for f in failed}
    assert hpl in found, out
    assert found <= {hpl, ('HpccNode', 'StarSTREAM_Triad', 'peers')}, out
    [hpl] = [f for f in failed if f['metric'] == 'HPL_Tflops']
    assert len(hpl['confirmations']) == 2
    assert all(c.startswith('fail') for c in hpl['confirmations']), hpl
    # HPCC again in a job of its own; a node flagged by noise may be in the
    # same confirmation session (it ends flaky, never bad: checked above)
    for attempt in (1, 2):
        again = re.search(r'^confirming \d+ node\(s\) of sandbox:hbv4 '
                          rf'\(attempt {attempt} of 2\): HpccNode on (.+)$',
                          out, re.M)
        assert again and CAPPED in again.group(1).split(', '), out
    # (beyond ten times off its peers, a value says so instead of a
    # percentage: scripts/comparison/peers.py)
    assert re.search(rf'^{CAPPED} +HpccNode +HPL_Tflops .* bad +peers: '
                     r'([\d.]+% below|implausible value)', out, re.M), out
    assert [f['node'] for f in summary['apart']['confirmed']] == [CAPPED]
    check_the_report(env, out, summary, impact_api, monkeypatch)
    follow_up_and_take_back(env, kvp_dir, impact_api,
                            summary['azure_reports']['reports'][0])


def check_the_report(env, out, summary, impact_api, monkeypatch):
    # exactly one report, for the capped node, with the mapped category,
    # its VM id, its physical host and the evidence
    [put] = impact_api.puts
    assert put.status == 200
    assert put.token_resource == 'https://management.azure.com'
    props = put.body['properties']
    assert props['impactCategory'] == 'Resource.Hpc.Unhealthy.CPUPerformance'
    assert props['impactedResourceId'] == vm_id(CAPPED)
    assert props['additionalProperties']['PhysicalHostName'] == \
        host_of(CAPPED)
    for evidence in (summary['session_id'], 'HpccNode, HPL_Tflops=',
                     'Tflop/s (peers)', 'failed 2 re-measurement(s) too'):
        assert evidence in props['impactDescription'], props
    assert f'reported to Azure: {CAPPED} as Resource.Hpc.Unhealthy.' \
        'CPUPerformance' in out
    # then drained, as before
    assert f'drained {CAPPED}' in out
    assert node_state(CAPPED).startswith('drain')
    # the summary, the ledger and the store say so
    [sent] = summary['azure_reports']['reports']
    assert sent['state'] == 'filed' and sent['node'] == CAPPED
    monkeypatch.setenv('CLUSTERPROOF_HOME', env['CLUSTERPROOF_HOME'])
    assert list(ledger.open_reports()) == [sent['name']]
    rows = stored_rows(Path(env['CLUSTERPROOF_HOME']))
    reports = [r for r in rows
               if r['check_perf_var'] == 'guest_health_report']
    assert len(reports) == 1
    assert reports[0]['guest_health_report']['name'] == sent['name']
    assert reports[0]['guest_health_report']['physical_host_name'] == \
        host_of(CAPPED)
    assert reports[0]['check_job_nodelist'] == [CAPPED]
    # the health sampler read each node's own KVP pool too (the fingerprint
    # keeps the fully qualified name)
    hosts = {r['check_job_nodelist'][0]: r['physical_host'] for r in rows
             if r['check_perf_var'] == 'HPL_Tflops'
             and r['facility'] == 'reframe'}
    assert hosts == {n: host_of(n) + '.example' for n in NODES}
    assert not any(t in json.dumps(summary) for t in impact_api.tokens)
    # KQL's latest verdict of the node's HPCC is its failure; the report
    # is a line of its own
    latest = subprocess.run(
        [sys.executable, str(REPO / 'scripts' / 'clusterproof'), 'query',
         'latest_by_node', '--json'], env=env, cwd=str(REPO),
        capture_output=True, text=True, timeout=300)
    assert latest.returncode == 0, latest.stderr
    verdicts = {r['check_name']: r['check_result']
                for r in json.loads(latest.stdout) if r['node'] == CAPPED}
    assert verdicts['HpccNode'] == 'fail'
    assert verdicts['GuestHealthReport'] == 'informational'


def follow_up_and_take_back(env, kvp_dir, impact_api, sent):
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
    assert f'az vm deallocate --ids {vm_id(CAPPED)}' in follow.stdout
    assert 'NodeRemovedFromService' in follow.stdout
    [got] = [r for r in impact_api.requests if r.method == 'GET']
    assert got.path.endswith(f"/workloadImpacts/{sent['name']}/insights")
    assert got.api_version == '2025-01-01-preview'

    # the VM came back on another host (the cap is gone) and passes:
    # --resume resumes it and closes its report. Alone, peers cannot
    # judge it: STREAM against the sandbox's reference does
    # (tests/support/data/acceptance/references).
    (kvp_dir / f'kvp-{CAPPED}').write_bytes(kvp_pool([
        ('PhysicalHostName', 'GGBB90904999')]))
    result, summary = acceptance(
        env, '--system', 'sandbox', '--partition', 'hbv4', *STREAM_ONLY,
        '--resume', '--', '-S', 'array_size=20000000')
    assert result.returncode == 0, result.stdout + result.stderr
    assert summary['azure_reports']['closed'] == [sent['name']]
    assert f"report {sent['name']} closed: {CAPPED} passed on physical " \
        f"host GGBB90904999 (reported: {host_of(CAPPED)})" in result.stdout
    assert ledger.open_reports() == {}
    assert node_state(CAPPED) == 'idle'
    assert len(impact_api.puts) == 1


def insight(code, terminal, hour):
    """An insight as the report page's example answer shows one."""
    return {'name': code, 'properties': {
        'additionalDetails': {'statusCode': code,
                              'terminalInsight': terminal},
        'category': 'MitigationAction', 'status': 'Resolved',
        'eventTime': f'2026-12-05T{hour}:00Z',
        'content': {'title': code}}}
