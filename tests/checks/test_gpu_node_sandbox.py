"""`clusterproof acceptance` of the GPU node checks (checks/gpu/gpu_node.py)
on the sandbox Slurm: its CPU-only ndv5 nodes pretend to be ND H100 v5 VMs
(CLUSTERPROOF_SANDBOX_GPUS=8), and stand-ins of nvidia-smi and dcgmi
(tests/support/standins/gpu) replay composed ND H100 v5 outputs
(tests/support/data/gpu-node/PROVENANCE.md), checking their own command
lines. On sb-n2 GPU 5 has NVLink 3 down, on sb-n3 GPU 5 is missing, on
sb-n5 GPU 2 fails DCGM's diagnostic: acceptance's verdicts, summary, table
and Slurm drain reasons name those three GPUs (index, bus id, serial) and no other, and every row about a GPU
carries its index, bus id and serial."""
import os
import re
import subprocess
from pathlib import Path

from tests.support.acceptance_runs import (NODES, acceptance, by_pass, expected,
                                           verdict_of)
from tests.support.helpers import STANDINS

DATA = Path(__file__).resolve().parents[1] / 'support' / 'data' / 'gpu-node'
EIGHT = DATA / 'ndv5-8gpu-nvidia-smi-q_composed.txt'
SEVEN = DATA / 'ndv5-7gpu-gpu5-missing-nvidia-smi-q_composed.txt'
LINKS = DATA / 'ndv5-8gpu-nvlink-s_composed.txt'
LINK_DOWN = DATA / 'ndv5-8gpu-nvlink-s-gpu5-link3-inactive_composed.txt'
DIAG = DATA / 'ndv5-8gpu-dcgmi-diag-r3-json_composed.out'
DIAG_GPU2_FAILS = DATA / 'ndv5-8gpu-dcgmi-diag-r3-json-gpu2-fail_composed.out'
DIAG_SKIPPED = DATA / 'ndv5-8gpu-dcgmi-diag-r3-json-all-skip_composed.out'
CHECKS = ['GpuInventory', 'GpuNvlink', 'GpuDiag']


def test_acceptance_names_the_broken_gpus_and_no_other(sandbox_env):
    env = {**sandbox_env, 'CLUSTERPROOF_SANDBOX_GPUS': '8',
           'PATH': os.pathsep.join([str(STANDINS / 'gpu'),
                                    sandbox_env['PATH']]),
           'CLUSTERPROOF_REPLAY_GPU_Q': str(EIGHT),
           'CLUSTERPROOF_REPLAY_GPU_Q_SB_N3': str(SEVEN),
           'CLUSTERPROOF_REPLAY_GPU_NVLINK': str(LINKS),
           'CLUSTERPROOF_REPLAY_GPU_NVLINK_SB_N2': str(LINK_DOWN),
           'CLUSTERPROOF_REPLAY_DCGMI': str(DIAG),
           'CLUSTERPROOF_REPLAY_DCGMI_SB_N5': str(DIAG_GPU2_FAILS),
           # acceptance runs level 3 (the stand-in refuses any other)
           'CLUSTERPROOF_REPLAY_DCGMI_LEVEL': '3'}
    result, summary = acceptance(env, '--system', 'sandbox', '--partition',
                                 'ndv5', '--checks', 'checks/gpu/gpu_node.py',
                                 '--drain', '--max-drain', '3')
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert verdict_of(summary) == expected('good', {
        'sb-n2': 'bad', 'sb-n3': 'bad', 'sb-n5': 'bad'}), out
    # every node ran the three checks, one job each
    assert {(f['check'], n['node']) for n in summary['nodes']
            for f in n['findings']} == {(c, node) for c in CHECKS
                                        for node in NODES}, out
    bad = {n['node']: [(f['check'], f['reason'], f['gpu'])
                       for f in n['findings'] if f['verdict'] == 'fail'
                       and f['kind']]
           for n in summary['nodes'] if n['verdict'] == 'bad'}
    # bus ids: the ND H100 v5 layout (checks/references/health.yaml); the
    # serial of GPU 5 of the composed -q file (its 'Serial Number' line)
    assert bad == {
        'sb-n2': [('GpuNvlink',
                   'health: GPU 5 (bus 0000000A:00:00.0, serial '
                   '1651323018205) NVLink 3 inactive',
                   {'index': 5, 'bus_id': '0000000A:00:00.0',
                    'serial': '1651323018205'})],
        'sb-n3': [('GpuInventory',
                   'health: GPU 5 (bus 0000000A:00:00.0) missing: no GPU at '
                   'bus 0000000A:00:00.0 (nvidia-smi shows 7 of 8)',
                   {'index': 5, 'bus_id': '0000000A:00:00.0',
                    'serial': None})],
        # DCGM's code and message, the GPU's bus id and serial
        'sb-n5': [('GpuDiag',
                   'health: GPU 2 (bus 00000003:00:00.0, serial '
                   '1651323018202) DCGM diagnostic fail '
                   '(DCGM_FR_FAULTY_MEMORY): Found 1 faulty memory elements '
                   'on GPU 2',
                   {'index': 2, 'bus_id': '00000003:00:00.0',
                    'serial': '1651323018202'})]}, out
    # sb-n3's count of GPUs (7 of 8) is recorded, not judged by its peers:
    # the inventory's finding above names the missing GPU, and peers judge
    # primary metrics only (scripts/comparison/metrics.py)
    assert not [f for n in summary['nodes'] if n['node'] == 'sb-n3'
                for f in n['findings'] if f['verdict'] == 'fail'
                and not f['kind']], out
    # the table printed names them, and no other GPU
    assert set(re.findall(r'GPU (\d+) \(bus', out)) == {'5', '2'}, out
    assert 'GPU 5 (bus 0000000A:00:00.0, serial 1651323018205) NVLink 3 ' \
        'inactive' in out
    # Slurm's drain reasons carry the GPU
    reasons = dict(line.split('|', 1) for line in subprocess.run(
        ['sinfo', '-h', '-N', '-n', 'sb-n2,sb-n3,sb-n5', '-o', '%N|%E'],
        capture_output=True, text=True, check=True).stdout.split('\n')
        if line)
    assert 'GpuNvlink health: GPU 5 (bus 0000000A:00:00.0, serial ' \
        '1651323018205) NVLink 3 inactive' in reasons['sb-n2'], reasons
    assert 'GpuInventory health: GPU 5 (bus 0000000A:00:00.0) missing' in \
        reasons['sb-n3'], reasons
    assert 'GpuDiag health: GPU 2 (bus 00000003:00:00.0, serial ' \
        '1651323018202) DCGM diagnostic fail' in reasons['sb-n5'], reasons
    # the rows: one per GPU and check, each naming its GPU
    first, again = by_pass(env, summary)
    # each bad node ran again only the check it failed (--confirm 1)
    assert {(r['check_job_nodelist'][0], r['check_name']) for r in again} \
        == {('sb-n2', 'GpuNvlink'), ('sb-n3', 'GpuInventory'),
            ('sb-n5', 'GpuDiag')}
    rows = [r for r in first if r['facility'] == 'clusterproof-health']
    per_gpu = {(r['check_job_nodelist'][0], r['check_name'].split(' ')[0],
                r['check_perf_var'], r['gpu_index']): r for r in rows}
    inventory = per_gpu[('sb-n1', 'GpuInventory', 'gpu_inventory', 3)]
    assert (inventory['gpu_bus_id'], inventory['gpu_serial'],
            inventory['device']) == ('00000008:00:00.0', '1651323018203',
                                     'gpu3')
    assert inventory['check_params']['health']['vbios'] == '96.00.51.00.0E'
    link = per_gpu[('sb-n2', 'GpuNvlink', 'nvlink_inactive', 5)]
    assert (link['check_perf_result'], link['gpu_serial']) == \
        ('fail', '1651323018205')
    missing = per_gpu[('sb-n3', 'GpuInventory', 'gpu_missing', 5)]
    assert (missing['check_perf_result'], missing['gpu_bus_id']) == \
        ('fail', '0000000A:00:00.0')
    diag = [r for r in rows if r['check_perf_var'] == 'dcgm_diagnostic']
    assert len(diag) == 8 * len(NODES)
    assert {(r['check_job_nodelist'][0], r['gpu_index'])
            for r in diag if r['check_perf_result'] == 'fail'} == \
        {('sb-n5', 2)}
    assert {(r['gpu_index'], r['gpu_serial']) for r in diag
            if r['check_job_nodelist'] == ['sb-n4']} == {
        (i, f'16513230182{i:02d}') for i in range(8)}
    failing = {(r['check_job_nodelist'][0], r['gpu_index'])
               for r in rows if r['check_perf_result'] == 'fail'}
    assert failing == {('sb-n2', 5), ('sb-n3', 5), ('sb-n5', 2)}


def test_a_diagnostic_that_skipped_everything_is_not_measured(sandbox_env):
    env = {**sandbox_env, 'CLUSTERPROOF_SANDBOX_GPUS': '8',
           'PATH': os.pathsep.join([str(STANDINS / 'gpu'),
                                    sandbox_env['PATH']]),
           'CLUSTERPROOF_REPLAY_GPU_Q': str(EIGHT),
           'CLUSTERPROOF_REPLAY_DCGMI': str(DIAG),
           'CLUSTERPROOF_REPLAY_DCGMI_SB_N4': str(DIAG_SKIPPED)}
    result, summary = acceptance(env, '--system', 'sandbox', '--partition',
                                 'ndv5', '--checks', 'checks/gpu/gpu_node.py',
                                 '--exclude', '^Gpu(Inventory|Nvlink)')
    out = result.stdout + result.stderr
    assert verdict_of(summary) == expected(
        'good', {'sb-n4': 'not_measured'}), out
    [gap] = [f for n in summary['nodes'] if n['node'] == 'sb-n4'
             for f in n['findings'] if f['verdict'] == 'not_measured']
    assert gap['check'] == 'GpuDiag'
    assert 'every test plugin was skipped on every GPU (not measured): ' \
        'diagnostic' in gap['reason'], gap
