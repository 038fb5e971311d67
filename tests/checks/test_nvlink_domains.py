"""NVLink domains on GB200/GB300: each node's domain from the Fabric
sections of its `nvidia-smi -q` (real public outputs, replayed by a
stand-in that checks its arguments), recorded by the node phase, splits the
set phase into one MNNVL run per domain and one cross-domain InfiniBand
run; a fabric that is not Completed/Success, or IMEX down, is a finding."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checks.gpu.nvlink_fabric import imex_state
from checks.parsers.nvidia_fabric import node_fabric, parse_fabric
from scripts.acceptance import nvlink, plan, verdicts
from tests.support.helpers import DATA, REPO, STANDINS, stored_rows, suite_env

SMI = DATA / 'nvidia-smi'
RACK_A = SMI / 'fabric_gb200_4gpu_rack-b78ed242_composed.txt'
RACK_B = SMI / 'fabric_gb200_4gpu_rack-cc79d754_composed.txt'
UNHEALTHY = SMI / 'fabric_gb200_completed_health-unhealthy_dra-driver-626.txt'
NO_RESOURCES = SMI / 'fabric_azure_insufficient-resources_azhpc-images-506.txt'
DOMAIN_A = 'b78ed242-7b98-426f-b194-b76b8899f4ec/32766'
DOMAIN_B = 'cc79d754-915f-408b-b1c3-b8c3aa6668ab/32766'
NODES = ['sb-n1', 'sb-n2', 'sb-n3', 'sb-n4']

OVERLAY = '''\
"""Test overlay: the sandbox's CPU-only ndv5 nodes pretend to be GB200 VMs
(4 GPUs, multi-node NVLink); everything else is config/config.py."""
import copy

from config.config import site_configuration as _base

site_configuration = copy.deepcopy(_base)
for _system in site_configuration['systems']:
    for _part in _system['partitions']:
        if _system['name'] == 'sandbox' and _part['name'] == 'ndv5':
            _part['features'] = ['gpu']
            _part['extras'].update(gpus_per_node=4,
                                   nccl_multinode_fabric='mnnvl')
'''


def test_real_fabric_sections():
    assert node_fabric(RACK_A.read_text()).domain == DOMAIN_A
    assert len(parse_fabric(RACK_B.read_text())) == 4
    sick = node_fabric(UNHEALTHY.read_text())
    assert sick.domain is None
    assert sick.problems == ['GPU 0: Health Summary Unhealthy']
    azure = node_fabric(NO_RESOURCES.read_text())
    assert azure.problems == [
        'GPU 0: Status Insufficient Resources (expected Success)',
        'GPU 0: CliqueId 0',
        'GPU 0: ClusterUUID 00000000-0000-0000-0000-000000000000']
    mixed = node_fabric(RACK_A.read_text() + '--\n' + RACK_B.read_text())
    assert mixed.domain is None
    assert mixed.problems[-1].startswith('GPUs in different NVLink domains')
    assert node_fabric('GPU 00000000:01:00.0\n').problems == \
        ['no Fabric section in nvidia-smi -q']
    assert imex_state('x\nclusterproof-imex: inactive\n') == 'inactive'


def run_fabric_check(tmp_path, sandbox, **replay):
    """NvlinkFabric pinned to every sandbox node, as acceptance's node phase
    runs it; the run report's cases."""
    overlay = tmp_path / 'gb200_overlay.py'
    overlay.write_text(OVERLAY)
    env = suite_env(tmp_path / 'home', {**sandbox.env, **replay})
    env['PATH'] = os.pathsep.join([str(STANDINS / 'gb200'), str(STANDINS),
                                   os.environ['PATH']])
    env['PYTHONPATH'] = str(REPO)
    phase = plan.Phase('sandbox', 'ndv5', 'node', [(n,) for n in NODES])
    report = tmp_path / 'report.json'
    argv = [str(Path(sys.executable).parent / 'reframe'), '-C', str(overlay),
            *plan.reframe_options(phase, plan.Selection(
                checks=['checks/gpu/nvlink_fabric.py']), str(report),
                str(tmp_path / 'rfm'), 0)]
    result = subprocess.run(argv, env=env, cwd=str(REPO), capture_output=True,
                            text=True, timeout=600)
    output = result.stdout + result.stderr
    assert 'Ran 4/4 test case(s)' in output, output
    return verdicts.final_cases(json.loads(report.read_text())), output


@pytest.fixture
def sandbox(slurm_sandbox):
    return slurm_sandbox


def test_two_domains_give_one_mnnvl_run_each_and_one_across(tmp_path,
                                                            sandbox):
    cases, output = run_fabric_check(
        tmp_path, sandbox,
        CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N1=str(RACK_A),
        CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N2=str(RACK_A),
        CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N3=str(RACK_B),
        CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N4=str(RACK_B))
    assert '0 failure(s)' in output, output
    rows = stored_rows(tmp_path / 'home')
    assert {tuple(r['check_job_nodelist']): r['nvlink_domain']
            for r in rows} == {('sb-n1',): DOMAIN_A, ('sb-n2',): DOMAIN_A,
                               ('sb-n3',): DOMAIN_B, ('sb-n4',): DOMAIN_B}
    domains = nvlink.node_domains(cases)
    assert domains == {'sb-n1': DOMAIN_A, 'sb-n2': DOMAIN_A,
                       'sb-n3': DOMAIN_B, 'sb-n4': DOMAIN_B}
    set_phase = next(p for p in plan.phases('sandbox', 'ndv5', NODES)
                     if p.scope == 'set')
    phases = nvlink.split_set_phase(set_phase, domains)
    runs = {p.label: p for p in phases}
    assert list(runs) == ['ndv5-set', 'ndv5-set-nvlink-b78ed242',
                          'ndv5-set-nvlink-cc79d754',
                          'ndv5-set-across-nvlink-domains']
    assert runs['ndv5-set'].pins == [tuple(NODES)]
    assert runs['ndv5-set-nvlink-b78ed242'].pins == [('sb-n1', 'sb-n2')]
    assert runs['ndv5-set-nvlink-cc79d754'].pins == [('sb-n3', 'sb-n4')]
    assert runs['ndv5-set-across-nvlink-domains'].pins == [('sb-n1', 'sb-n3')]
    every = runs['ndv5-set'].scope_options()
    assert every[-2:] == ['-x', plan.names_pattern(['NcclMultiNode'])]
    for label in ('ndv5-set-nvlink-b78ed242', 'ndv5-set-nvlink-cc79d754'):
        options = runs[label].scope_options()
        assert '-S' in options and 'NcclMultiNode.num_nodes=2' in options
        assert plan.names_pattern(['OsuCollective']) in options
        # the partition's fabric (mnnvl) is expected: nothing overrides it
        assert not any(o.startswith('NcclMultiNode.fabric=') for o in options)
    assert runs['ndv5-set-nvlink-b78ed242'].scope_options()[-2:] == \
        ['-S', f'NcclMultiNode.nvlink_domain={DOMAIN_A}']
    across = runs['ndv5-set-across-nvlink-domains'].scope_options()
    assert across[-2:] == ['-S', 'NcclMultiNode.fabric=ib']
    # two findings, each naming where it ran
    finding = verdicts.Finding('*', 'sandbox:ndv5', 'NcclMultiNode',
                               verdicts.FAIL)
    nvlink.label_findings(runs['ndv5-set-across-nvlink-domains'], [finding])
    assert finding.check == \
        'NcclMultiNode [across NVLink domains: sb-n1,sb-n3]'


def test_a_sick_fabric_or_imex_down_is_a_finding(tmp_path, sandbox):
    cases, output = run_fabric_check(
        tmp_path, sandbox,
        CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N1=str(RACK_A),
        CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N2=str(UNHEALTHY),
        CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N3=str(RACK_A),
        CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N4=str(NO_RESOURCES),
        CLUSTERPROOF_STANDIN_IMEX_SB_N3='inactive')
    assert '3 failure(s)' in output, output
    assert nvlink.node_domains(cases) == {'sb-n1': DOMAIN_A}
    findings = {f.node: f for case in cases
                for f in verdicts.case_findings(case, {})}
    assert findings['sb-n1'].verdict == verdicts.PASS
    assert 'GPU 0: Health Summary Unhealthy' in findings['sb-n2'].reason
    assert ('IMEX service nvidia-imex is inactive (expected active)'
            in findings['sb-n3'].reason)
    assert ('GPU 0: Status Insufficient Resources (expected Success)'
            in findings['sb-n4'].reason)
    assert all(findings[n].verdict == verdicts.FAIL
               for n in ('sb-n2', 'sb-n3', 'sb-n4'))
    # one node with a domain: no MNNVL run of two, the set phase stays whole
    set_phase = next(p for p in plan.phases('sandbox', 'ndv5', NODES)
                     if p.scope == 'set')
    assert nvlink.split_set_phase(set_phase, nvlink.node_domains(cases)) \
        == [set_phase]


def test_slurm_blocks_stand_in_where_the_nodes_recorded_no_domain():
    from scripts.acceptance import block_topology
    assert block_topology.expand_hostlist('gpu-[1-3,07],x,n[08-10]') == \
        ['gpu-1', 'gpu-2', 'gpu-3', 'gpu-07', 'x', 'n08', 'n09', 'n10']
    blocks = block_topology.parse_blocks(
        (DATA / 'ccws' / 'scontrol-show-topology-block.txt').read_text())
    assert len(blocks) == 17
    assert blocks['ccw-1-3-gpu-31'] == 'block:block3'
    assert blocks['ccw-1-3-gpu-294'] == 'block:block4'
    nodes = ['ccw-1-3-gpu-31', 'ccw-1-3-gpu-52', 'ccw-1-3-gpu-5',
             'ccw-1-3-gpu-17']
    set_phase = next(p for p in plan.phases('azure', 'ndgb200v6', nodes)
                     if p.scope == 'set')
    # no NvlinkFabric result for the partition: Slurm's blocks decide
    domains = nvlink.domains_so_far([], set_phase, lambda: blocks)
    assert [p.label for p in nvlink.split_set_phase(set_phase, domains)] == \
        ['ndgb200v6-set', 'ndgb200v6-set-nvlink-block3',
         'ndgb200v6-set-nvlink-block4',
         'ndgb200v6-set-across-nvlink-domains']
    # not a multi-node NVLink partition: blocks are not asked for
    assert nvlink.domains_so_far([], set_phase, None) == {}


def test_the_gb200_stand_ins_refuse_other_command_lines(tmp_path):
    env = {**os.environ, 'SLURMD_NODENAME': 'sb-n1',
           'CLUSTERPROOF_REPLAY_NVIDIA_SMI_SB_N1': str(RACK_A)}
    smi = STANDINS / 'gb200' / 'nvidia-smi'
    ok = subprocess.run([str(smi), '-q'], env=env, capture_output=True,
                        text=True, timeout=30)
    assert ok.returncode == 0 and ok.stdout == RACK_A.read_text()
    other = subprocess.run([str(smi), '-L'], env=env, capture_output=True,
                           text=True, timeout=30)
    assert other.returncode == 2 and 'only -q is replayed' in other.stderr
    unknown = subprocess.run([str(smi), '-q'], capture_output=True, text=True,
                             env={**env, 'SLURMD_NODENAME': 'sb-n9'},
                             timeout=30)
    assert unknown.returncode == 2
    systemctl = STANDINS / 'gb200' / 'systemctl'
    down = subprocess.run([str(systemctl), 'is-active', 'nvidia-imex'],
                          env={**env, 'CLUSTERPROOF_STANDIN_IMEX_SB_N1':
                               'failed'}, capture_output=True, text=True,
                          timeout=30)
    assert (down.returncode, down.stdout) == (3, 'failed\n')
    wrong = subprocess.run([str(systemctl), 'restart', 'nvidia-imex'],
                           env=env, capture_output=True, text=True,
                           timeout=30)
    assert wrong.returncode == 2
