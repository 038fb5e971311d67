"""The GPU node checks without a sandbox: the Azure dry run of every ND
partition (the command lines each job runs), the stand-ins' refusals, and
the judging of what only stand-ins can make happen here (a GPU that hangs,
links slower than the SKU's, counters that rise, DCGM's internal errors and
skips) on the composed ND H100 v5 outputs (tests/support/data/gpu-node) and
the real ones of the corpus."""
import os
import subprocess
from pathlib import Path

from checks.common.node_probe import PROBE
from checks.gpu.gpu_node import ask_each_gpu
from checks.health import assessment, dump, gpu_node, rules
from checks.parsers import dcgmi
from tests.support.helpers import STANDINS, run_reframe, suite_env

DATA = Path(__file__).resolve().parents[1] / 'support' / 'data'
NODE = DATA / 'gpu-node'
EIGHT = NODE / 'ndv5-8gpu-nvidia-smi-q_composed.txt'
H100 = 'Standard_ND96isr_H100_v5'
ND_PARTITIONS = {'ndv4': 8, 'ndv5': 8, 'ndh200v5': 8, 'ndgb200v6': 4,
                 'ndgb300v6': 4}
STANDIN = STANDINS / 'gpu'


def test_the_azure_dry_run_of_every_nd_partition(tmp_path):
    prefix = tmp_path / 'rfm'
    result = run_reframe(
        '--system', 'azure', '-c', 'checks/gpu/gpu_node.py', '-n',
        '^(GpuInventory|GpuNvlink|GpuDiag|GpuDiagDaily)$', '--dry-run',
        '--prefix', str(prefix), env=suite_env(tmp_path / 'home'),
        cwd=str(Path(__file__).resolve().parents[2]), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    scripts = {(path.parts[-4], path.parent.name): path.read_text()
               for path in prefix.rglob('rfm_job.sh')}
    # no job on a CPU partition ('+gpu'), four on each ND one
    assert {p for p, _ in scripts} == set(ND_PARTITIONS)
    for partition, gpus in ND_PARTITIONS.items():
        inventory = scripts[(partition, 'GpuInventory')]
        # each GPU asked on its own, under the time limit
        assert f'for i in $(seq 0 {gpus - 1}); do out=$(timeout 60 ' \
            'nvidia-smi -q -i "$i" 2>&1)' in inventory
        assert f'#SBATCH --gres=gpu:{gpus}' in inventory
        links = scripts[(partition, 'GpuNvlink')]
        assert 'srun timeout 60 nvidia-smi nvlink -s' in links
        assert 'timeout 60 nvidia-smi -q > clusterproof_gpus.txt' in links
        diag = scripts[(partition, 'GpuDiag')]
        assert 'srun dcgmi diag -r 3 -j' in diag
        assert 'dcgmi not found on node' in diag and 'exit 127' in diag
        assert 'srun dcgmi diag -r 2 -j' in \
            scripts[(partition, 'GpuDiagDaily')]
        # the health sample before and after each job (nvlink -e inside)
        for text in (inventory, links, diag):
            assert text.index('node_probe.sh before') < \
                text.index('node_probe.sh after')
    assert 'nvidia-smi nvlink -e' in Path(PROBE).read_text()


def standin(*argv, **env):
    return subprocess.run([str(STANDIN / argv[0]), *argv[1:]],
                          env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=30)


def test_the_stand_ins_check_their_command_lines_and_files(tmp_path):
    q = {'CLUSTERPROOF_REPLAY_GPU_Q': str(EIGHT)}
    one = standin('nvidia-smi', '-q', '-i', '3', **q)
    assert one.returncode == 0 and 'GPU 00000008:00:00.0' in one.stdout
    assert one.stdout.count('Serial Number') == 1
    past = standin('nvidia-smi', '-q', '-i', '8', **q)
    assert (past.returncode, past.stdout) == (6, 'No devices were found\n')
    assert standin('nvidia-smi', '-L', **q).returncode == 2
    assert standin('nvidia-smi', '-q').returncode == 2      # no file named
    (tmp_path / 'foreign.txt').write_text('hello\n')
    assert standin('nvidia-smi', '-q', '-i', '0', CLUSTERPROOF_REPLAY_GPU_Q=
                   str(tmp_path / 'foreign.txt')).returncode == 2
    diag = {'CLUSTERPROOF_REPLAY_DCGMI': str(
        NODE / 'ndv5-8gpu-dcgmi-diag-r3-json_composed.out'),
        'CLUSTERPROOF_REPLAY_DCGMI_LEVEL': '3'}
    assert standin('dcgmi', 'diag', '-r', '3', '-j', **diag).returncode == 0
    assert standin('dcgmi', 'diag', '-r', '2', '-j', **diag).returncode == 2
    assert standin('dcgmi', 'diag', '-r', '3', **diag).returncode == 2
    assert standin('dcgmi', 'diag', '-r', '3', '-j', CLUSTERPROOF_REPLAY_DCGMI=
                   str(EIGHT)).returncode == 2


def test_a_gpu_that_hangs_is_a_finding_not_a_hung_job():
    env = {**os.environ, 'PATH': f'{STANDIN}{os.pathsep}{os.environ["PATH"]}',
           'CLUSTERPROOF_REPLAY_GPU_Q': str(EIGHT),
           'CLUSTERPROOF_REPLAY_GPU_HANG': '2'}
    out = subprocess.run(['sh', '-c', ask_each_gpu(8, 1)], env=env,
                         capture_output=True, text=True, timeout=60).stdout
    result = gpu_node.inventory('nd-1', out, gpu_node.expected(H100),
                                rules.load(), 1)
    assert [(f.device, f.metric, f.reason) for f in result.findings] == [
        ('gpu2', 'gpu_unanswered',
         'GPU 2 did not answer nvidia-smi within 1 s')]
    # the bus id the layout gives GPU 2 (checks/references/health.yaml)
    assert result.findings[0].gpu == {'index': 2, 'bus_id':
                                      '00000003:00:00.0', 'serial': None}


def test_modes_other_than_the_skus_are_findings():
    text = EIGHT.read_text().replace(
        'Persistence Mode                      : Enabled',
        'Persistence Mode                      : Disabled', 1)
    result = gpu_node.inventory('nd-1', text, gpu_node.expected(H100),
                                rules.load(), 60)
    assert [(f.metric, f.reason, f.gpu['serial']) for f in
            result.findings] == [('persistence_mode', 'GPU 0 persistence '
                                  'mode Disabled (expected Enabled)',
                                  '1651323018200')]
    # where no layout is published, the count alone says what is missing
    short = gpu_node.inventory('nd-1', text, gpu_node.expected(
        'Standard_ND96isr_H200_v5'), rules.load(), 60)
    assert not [f for f in short.findings if f.metric == 'gpu_missing']


def test_links_below_the_skus_count_or_speed_are_named():
    smi = EIGHT.read_text()
    links = (NODE / 'ndv5-8gpu-nvlink-s_composed.txt').read_text()
    lines = links.splitlines(keepends=True)
    # GPU 1's link 7 at 25 GB/s; GPU 4's link 17 not listed
    slow = ''.join(line.replace('26.562', '25') if n == 19 + 8 else line
                   for n, line in enumerate(lines)
                   if n != 4 * 19 + 18)
    result = gpu_node.nvlinks('nd-1', slow, smi, rules.load(),
                              rules.nominal(H100))
    assert sorted((f.device, f.metric, f.reason) for f in result.findings) \
        == [('gpu1', 'nvlink_link_speed',
             'GPU 1 NVLink 7 at 25 GB/s, below 26.562 GB/s'),
            ('gpu4', 'nvlink_links_up', 'GPU 4 NVLink: 17 of 18 links up')]
    assert {f.gpu['serial'] for f in result.findings} == {
        '1651323018201', '1651323018204'}
    # the real Azure A100 output (12 x 25 GB/s) is healthy for ND A100 v4
    a100 = (DATA / 'nvlink-topo' /
            'nvidia-smi-nvlink-s-GPU7-A100-80GB-azure-azhc.out').read_text()
    assert gpu_node.nvlinks('nd-1', a100, '', rules.load(), rules.nominal(
        'Standard_ND96amsr_A100_v4')).findings == []


def test_nvlink_error_counters_rising_around_a_test_are_recorded():
    errors = (DATA / 'nvlink-topo' / 'nvidia-smi-nvlink-e-H100-anonymized-'
              'mlengineering-excerpt.out').read_text()
    xml = (Path(__file__).resolve().parents[1] / 'support' / 'data' / 'health' /
           'telegraf_a100-sxm4-v12.xml').read_text()

    def sample(counters):
        return dump.split(f'##clusterproof-health nvidia-smi\n{xml}\n'
                          f'##clusterproof-health nvlink-errors\n{counters}')
    after = errors.replace('Link 1: CRC Errors: 0', 'Link 1: CRC Errors: 4')
    result = assessment.assess('nd-1', sample(errors), sample(after),
                          rules.load(), rules.nominal(H100))
    [row] = [r for r in result.rows if r.metric == 'nvlink_crc_errors']
    assert (row.device, row.value, row.result, row.reason) == (
        'gpu0', 4, 'no_reference', 'GPU 0 NVLink: nvlink_crc_errors +4 '
        'during the test')
    assert row.gpu['serial'] == '1650522003820'   # the XML's <serial>
    assert not [f for f in result.findings if 'nvlink' in f.metric]


def test_dcgm_internal_errors_and_skips_name_no_gpu():
    smi = EIGHT.read_text()
    text = (DATA / 'dcgmi-diag' / 'dcgmi-diag-human-dcgm4.2.3-4xL40S-26b9-'
            'pcie-FAIL-k8s-pod.out').read_text()
    result, internal, skipped = gpu_node.diagnostics(
        'nd-1', dcgmi.parse(text), smi, rules.load())
    assert result.findings == [] and skipped == []
    assert len(internal) == 1 and 'A child process (152)' in internal[0]
    every_skip = (DATA / 'dcgmi-diag' / 'dcgmi-diag-r3-human-dcgm4.4.2-GB10-'
                  '2e12-all-SKIP-k8s-excerpt.out').read_text()
    result, internal, skipped = gpu_node.diagnostics(
        'nd-1', dcgmi.parse(every_skip), smi, rules.load())
    assert skipped == ['diagnostic', 'memory', 'memory_bandwidth',
                       'nvbandwidth', 'pcie', 'targeted_power',
                       'targeted_stress']
    assert {r.result for r in result.rows if r.metric != 'dcgm_software'} \
        == {'not_measured'}
    thermal = (DATA / 'dcgmi-diag' / 'dcgmi-diag-r2-human-GPU-Memory-FAIL-'
               'thermal-mlengineering-excerpt.out').read_text()
    result, _, _ = gpu_node.diagnostics('nd-1', dcgmi.parse(thermal), smi,
                                        rules.load())
    [finding] = result.findings
    assert finding.gpu == {'index': 0, 'bus_id': '00000001:00:00.0',
                           'serial': '1651323018200'}
    assert finding.reason.startswith(
        'GPU 0 DCGM GPU Memory fail (DCGM_FR_THERMAL_VIOLATIONS_TS)')


def test_a_diagnostic_that_measured_nothing_says_why():
    skipped = (NODE / 'ndv5-8gpu-dcgmi-diag-r3-json-all-skip_composed.out'
               ).read_text()
    assert gpu_node.diag_not_measured(dcgmi.parse(skipped), skipped, 'h') \
        == ('dcgmi diag: every test plugin was skipped on every GPU (not '
            'measured): diagnostic')
    ran = (NODE / 'ndv5-8gpu-dcgmi-diag-r3-json_composed.out').read_text()
    assert gpu_node.diag_not_measured(dcgmi.parse(ran), ran, 'h') is None
    # dcgmi's words where no nv-hostengine runs, as quoted in
    # https://github.com/NVIDIA/DCGM/issues/57 (and #133)
    down = 'Error: unable to establish a connection to the specified host: ' \
        'localhost\nError: Unable to connect to host engine. Host engine ' \
        'connection invalid/disconnected.\n'
    assert gpu_node.diag_not_measured(dcgmi.parse(down), down, 'start it') \
        == ('dcgmi cannot reach DCGM (Error: unable to establish a '
            'connection to the specified host: localhost): start it')
