"""The GPU node checks (checks/gpu/gpu_node.py) for real on the sandbox
Slurm: its CPU-only ndv5 nodes pretend to be ND H100 v5 VMs (a test overlay
of the configuration gives them 8 GPUs), and stand-ins of nvidia-smi and
dcgmi (tests/standins/gpu) replay composed ND H100 v5 outputs
(tests/support/data/gpu-node/PROVENANCE.md), checking their own command
lines. On sb-n2 GPU 5 has NVLink 3 down, on sb-n3 GPU 5 is missing:
acceptance's verdicts, table and drain reasons name those two GPUs (index,
bus id, serial) and no other, and every row about a GPU carries its index,
bus id and serial."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from scripts.acceptance import plan, session, summary, verdicts
from tests.helpers import REPO, STANDINS, stored_rows, suite_env

DATA = Path(__file__).resolve().parents[1] / 'support' / 'data' / 'gpu-node'
NODES = ['sb-n1', 'sb-n2', 'sb-n3', 'sb-n4']
EIGHT = DATA / 'ndv5-8gpu-nvidia-smi-q_composed.txt'
SEVEN = DATA / 'ndv5-7gpu-gpu5-missing-nvidia-smi-q_composed.txt'
LINKS = DATA / 'ndv5-8gpu-nvlink-s_composed.txt'
LINK_DOWN = DATA / 'ndv5-8gpu-nvlink-s-gpu5-link3-inactive_composed.txt'
DIAG = DATA / 'ndv5-8gpu-dcgmi-diag-r3-json_composed.out'
CHECKS = ['GpuInventory', 'GpuNvlink', 'GpuDiag']

OVERLAY = '''\
"""Test overlay: the sandbox's CPU-only ndv5 nodes pretend to be ND H100 v5
VMs with 8 GPUs; everything else is config/config.py."""
import copy

from config.config import site_configuration as _base

site_configuration = copy.deepcopy(_base)
for _system in site_configuration['systems']:
    for _part in _system['partitions']:
        if _system['name'] == 'sandbox' and _part['name'] == 'ndv5':
            _part['features'] = ['gpu']
            _part['extras'].update(gpus_per_node=8)
'''


def run_gpu_checks(tmp_path, sandbox, **replay):
    """The GPU node checks pinned to each node, as acceptance's node phase
    runs them (one node a job); the run report's cases and the output."""
    overlay = tmp_path / 'nd_overlay.py'
    overlay.write_text(OVERLAY)
    env = suite_env(tmp_path / 'home', {**sandbox.env, **replay})
    env['PATH'] = os.pathsep.join([str(STANDINS / 'gpu'), str(STANDINS),
                                   os.environ['PATH']])
    env['PYTHONPATH'] = str(REPO)
    phase = plan.Phase('sandbox', 'ndv5', 'node', [(n,) for n in NODES],
                       tag='one', names=tuple(CHECKS))
    report = tmp_path / 'report.json'
    argv = [str(Path(sys.executable).parent / 'reframe'), '-C', str(overlay),
            *plan.reframe_options(phase, plan.Selection(
                checks=['checks/gpu/gpu_node.py'], tags=['acceptance']),
                str(report), str(tmp_path / 'rfm'), 0)]
    result = subprocess.run(argv, env=env, cwd=str(REPO), capture_output=True,
                            text=True, timeout=600)
    output = result.stdout + result.stderr
    assert f'Ran {len(CHECKS) * len(NODES)}/{len(CHECKS) * len(NODES)} ' \
        'test case(s)' in output, output
    return verdicts.final_cases(json.loads(report.read_text())), output


def test_the_broken_gpus_are_named_and_no_other(tmp_path, slurm_sandbox):
    cases, output = run_gpu_checks(
        tmp_path, slurm_sandbox,
        CLUSTERPROOF_REPLAY_GPU_Q=str(EIGHT),
        CLUSTERPROOF_REPLAY_GPU_Q_SB_N3=str(SEVEN),
        CLUSTERPROOF_REPLAY_GPU_NVLINK=str(LINKS),
        CLUSTERPROOF_REPLAY_GPU_NVLINK_SB_N2=str(LINK_DOWN),
        CLUSTERPROOF_REPLAY_DCGMI=str(DIAG),
        # acceptance runs level 3 (the stand-in refuses any other)
        CLUSTERPROOF_REPLAY_DCGMI_LEVEL='3')
    findings = [f for case in cases
                for f in verdicts.case_findings(case, {})]
    states = {node: 'idle' for node in NODES}
    judged = verdicts.node_verdicts(findings, {'sandbox:ndv5': states})
    assert {v.node: v.verdict for v in judged} == {
        'sb-n1': 'good', 'sb-n2': 'bad', 'sb-n3': 'bad', 'sb-n4': 'good'}
    bad = {v.node: [(f.check, f.reason, f.gpu) for f in v.worst_findings()]
           for v in judged if v.verdict == 'bad'}
    # bus ids: the ND H100 v5 layout (checks/references/health.yaml); the
    # serial of GPU 5 of the composed -q file (its 'Serial Number' line)
    assert bad == {
        'sb-n2': [(f'GpuNvlink %pinned_nodes=sb-n2'.split(' %')[0],
                   'health: GPU 5 (bus 0000000A:00:00.0, serial '
                   '1651323018205) NVLink 3 inactive',
                   {'index': 5, 'bus_id': '0000000A:00:00.0',
                    'serial': '1651323018205'})],
        'sb-n3': [('GpuInventory',
                   'health: GPU 5 (bus 0000000A:00:00.0) missing: no GPU at '
                   'bus 0000000A:00:00.0 (nvidia-smi shows 7 of 8)',
                   {'index': 5, 'bus_id': '0000000A:00:00.0',
                    'serial': None})]}
    drains = session.plan_drains(judged, 4, {'sandbox:ndv5'})[0]
    assert {d['node']: d['reason'] for d in drains} == {
        'sb-n2': 'clusterproof acceptance: GpuNvlink health: GPU 5 (bus '
                 '0000000A:00:00.0, serial 1651323018205) NVLink 3 inactive',
        'sb-n3': 'clusterproof acceptance: GpuInventory health: GPU 5 (bus '
                 '0000000A:00:00.0) missing: no GPU at bus 0000000A:00:00.0 '
                 '(nvidia-smi shows 7 of 8)'}
    table = '\n'.join(summary.table_lines(judged, []))
    assert 'GPU 5 (bus 0000000A:00:00.0, serial 1651323018205) NVLink 3 ' \
        'inactive' in table
    assert re.findall(r'GPU (\d+) \(bus', table) == ['5', '5'], table
    assert [line.split()[0] for line in table.splitlines()
            if ' bad ' in line] == ['sb-n2', 'sb-n3']
    # the rows: one per GPU and check, each naming its GPU
    rows = [r for r in stored_rows(tmp_path / 'home')
            if r['facility'] == 'clusterproof-health']
    per_gpu = {(r['check_job_nodelist'][0], r['check_name'].split(' ')[0],
                r['check_perf_var'], r['gpu_index']): r for r in rows}
    inventory = per_gpu[('sb-n1', 'GpuInventory', 'gpu_inventory', 3)]
    assert (inventory['gpu_bus_id'], inventory['gpu_serial'],
            inventory['device']) == ('00000008:00:00.0', '1651323018203',
                                     'gpu3')
    assert inventory['check_params']['health']['vbios'] == \
        '96.00.51.00.0E'
    link = per_gpu[('sb-n2', 'GpuNvlink', 'nvlink_inactive', 5)]
    assert (link['check_perf_result'], link['gpu_serial']) == \
        ('fail', '1651323018205')
    missing = per_gpu[('sb-n3', 'GpuInventory', 'gpu_missing', 5)]
    assert (missing['check_perf_result'], missing['gpu_bus_id']) == \
        ('fail', '0000000A:00:00.0')
    diag = [r for r in rows if r['check_perf_var'] == 'dcgm_diagnostic']
    assert len(diag) == 8 * len(NODES)
    assert {r['check_perf_result'] for r in diag} == {'pass'}
    assert {(r['gpu_index'], r['gpu_serial']) for r in diag
            if r['check_job_nodelist'] == ['sb-n4']} == {
        (i, f'16513230182{i:02d}') for i in range(8)}
    failing = {(r['check_job_nodelist'][0], r['gpu_index'])
               for r in rows if r['check_perf_result'] == 'fail'}
    assert failing == {('sb-n2', 5), ('sb-n3', 5)}
