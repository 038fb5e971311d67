"""The per-GPU checks (checks/gpu/copy_bandwidth.py, hbm_bandwidth.py,
compute.py): --dry-run job scripts of every Azure ND partition, their
per-GPU perf variables and the references each finds. No GPU here: the
command lines, clock lock and reset, the sampler around the load, and the
reference keys are what is proven."""
import re

import pytest

from tests.support.helpers import DATA, REPO, run_reframe, suite_env

ANSI = re.compile(r'\x1b\[[0-9;]*m')
CHECKS = ('checks/gpu/copy_bandwidth.py', 'checks/gpu/hbm_bandwidth.py',
          'checks/gpu/compute.py', 'checks/gpu/fabric_bandwidth.py')
ND = {'ndv4': 8, 'ndv5': 8, 'ndh200v5': 8, 'ndgb200v6': 4, 'ndgb300v6': 4}
NVBANDWIDTH = ('nvbandwidth -t host_to_device_memcpy_ce '
               'device_to_host_memcpy_ce device_to_device_memcpy_read_ce '
               '-i 10 $nvbw_format')


def dry_run(tmp_path, *args, system='azure'):
    prefix = tmp_path / 'rfm'
    files = [arg for path in CHECKS for arg in ('-c', path)]
    done = run_reframe('--system', system, *files, *args, '--dry-run',
                       '--prefix', str(prefix),
                       env=suite_env(tmp_path / 'home'), cwd=str(REPO))
    out = ANSI.sub('', done.stdout)
    assert done.returncode == 0, out + done.stderr
    return prefix / 'stage' / 'azure', out


@pytest.fixture(scope='module')
def azure(tmp_path_factory):
    return dry_run(tmp_path_factory.mktemp('gpu'))


def script(stage, partition, test):
    return (stage / partition / 'builtin' / test / 'rfm_job.sh').read_text()


def block(out, test, partition):
    """The perf lines ReFrame printed for one test case."""
    found = re.search(rf'OK \] \(\s*\d+/\d+\) {test} /\w+ @azure:'
                      rf'{partition}\+builtin\n((?:P: .*\n)*)', out)
    assert found, (test, partition)
    return found.group(1)


@pytest.mark.parametrize('partition', sorted(ND))
def test_every_nd_partition_runs_the_health_checks_nvbandwidth(azure,
                                                               partition):
    stage, _ = azure
    lines = script(stage, partition, 'GpuCopyBandwidth').splitlines()
    assert NVBANDWIDTH in lines
    assert f'#SBATCH --gres=gpu:{ND[partition]}' in lines
    # JSON where the installed nvbandwidth has -j
    assert ("nvbw_format=$(nvbandwidth --help 2>&1 | grep -q -- '--json' "
            '&& echo -j)') in lines


@pytest.mark.parametrize('partition,mhz', [('ndv4', '1400'),
                                           ('ndv5', '2619')])
def test_clocks_locked_as_the_health_checks_lock_them_and_reset(azure,
                                                                partition,
                                                                mhz):
    text = script(azure[0], partition, 'GpuCopyBandwidth')
    lock = text.index(f'nvidia-smi -lgc {mhz} ')
    run = text.index(NVBANDWIDTH)
    reset = text.index('nvidia-smi -rgc')
    assert lock < run < reset


@pytest.mark.parametrize('partition', ['ndh200v5', 'ndgb200v6'])
def test_no_clock_lock_where_the_health_checks_lock_none(azure, partition):
    text = script(azure[0], partition, 'GpuCopyBandwidth')
    assert '-lgc' not in text and '-rgc' not in text


def test_one_row_per_gpu_judged_by_the_floors_with_nvlink_peak(azure):
    _, out = azure
    ndv5 = block(out, 'GpuCopyBandwidth', 'ndv5')
    for i in range(8):
        assert f'P: h2d_bw_gpu{i}: None GB/s (r:48.0, l:0.0, u:None)' in ndv5
        assert f'P: d2h_bw_gpu{i}: None GB/s (r:48.0, l:0.0, u:None)' in ndv5
        assert (f'P: p2p_read_bw_gpu{i}: None GB/s (r:335.0, l:0.0, '
                'u:None)') in ndv5
    assert 'gpu8' not in ndv5
    ndv4 = block(out, 'GpuCopyBandwidth', 'ndv4')
    assert 'P: p2p_read_bw_gpu7: None GB/s (r:238.0, l:0.0, u:None)' in ndv4
    gb200 = block(out, 'GpuCopyBandwidth', 'ndgb200v6')
    assert 'P: h2d_bw_gpu3: None GB/s\n' in gb200   # no published floor
    assert 'gpu4' not in gb200


def test_hbm_one_babelstream_per_gpu_with_the_guides_figure_shown(azure):
    stage, out = azure
    lines = script(stage, 'ndh200v5', 'GpuMemoryBandwidth').splitlines()
    assert ('for i in $(seq 0 7); do cuda-stream --numtimes 100 --device '
            '"$i" > babelstream_gpu"$i".out 2>&1 & done') in lines
    assert 'wait' in lines
    gb = script(stage, 'ndgb300v6', 'GpuMemoryBandwidth')
    assert 'seq 0 3' in gb
    # the Guide's Triad (4.15 TB/s) is shown, never judges (another build)
    h200 = block(out, 'GpuMemoryBandwidth', 'ndh200v5')
    assert 'P: triad_bw_gpu5: None GB/s (r:4150.0, l:None, u:None)' in h200


@pytest.mark.parametrize('test,seconds', [('GpuComputeQuick', 60),
                                          ('GpuComputeBurn', 600)])
def test_compute_samples_the_gpus_during_the_load(azure, test, seconds):
    text = script(azure[0], 'ndv5', test)
    start = text.index('nvidia-smi --query-gpu=index,pci.bus_id,serial,'
                       'clocks.sm,temperature.gpu,power.draw,'
                       'clocks_throttle_reasons.active '
                       '--format=csv,noheader,nounits -l 5 > '
                       'clusterproof_gpu_during.csv 2>&1 & '
                       'clusterproof_sampler=$!')
    load = text.index(f'\ngpu_burn -d -tc {seconds}\n')
    stop = text.index('kill "$clusterproof_sampler"')
    assert start < load < stop


def test_tiers_by_tag(tmp_path):
    _, daily = dry_run(tmp_path / 'd', '-t', 'daily', system='azure:ndv5')
    names = set(re.findall(r'OK \] \(\s*\d+/\d+\) (\w+) ', daily))
    assert names == {'GpuCopyBandwidth', 'GpuComputeQuick'}
    _, full = dry_run(tmp_path / 'a', '-t', 'acceptance',
                      system='azure:ndgb200v6')
    names = set(re.findall(r'OK \] \(\s*\d+/\d+\) (\w+) ', full))
    assert names == {'GpuCopyBandwidth', 'GpuMemoryBandwidth',
                     'GpuComputeBurn', 'GpuFabricBandwidth'}


def test_sm_copies_are_shown_beside_the_guide_not_judged(tmp_path):
    _, out = dry_run(tmp_path, '-n', 'GpuCopyBandwidth', '-S', 'engine=sm',
                     system='azure:ndv5')
    assert 'P: h2d_bw_gpu0: None GB/s (r:51.0, l:None, u:None)' in out
    assert 'P: d2h_bw_gpu0: None GB/s (r:52.0, l:None, u:None)' in out


def test_a_gpu_row_is_named_by_the_health_sample_taken_before_the_run():
    """The per-GPU checks name each GPU from the job's 'before' sample
    (nvidia-smi -q -x): a real A100 sample, tests/support/data/health (line 152:
    serial 1650522003820; line 189: bus id 00000000:01:00.0)."""
    from checks.gpu.per_gpu import gpu_identities
    from checks.health import dump
    xml = (DATA / 'health' / 'telegraf_a100-sxm4-v12.xml').read_text()
    sample = dump.split('##clusterproof-health nvidia-smi\n' + xml)
    assert gpu_identities({'nd-1': {'before': sample}}) == {
        0: {'index': 0, 'bus_id': '00000000:01:00.0',
            'serial': '1650522003820'}}
    assert gpu_identities({'nd-1': {'before': dump.split('')}}) == {}


@pytest.mark.parametrize('partition', ['ndgb200v6', 'ndgb300v6'])
def test_fabric_bandwidth_one_rank_per_gpu_of_every_node(azure, partition):
    stage, out = azure
    lines = (stage / partition / 'hpcx' / 'GpuFabricBandwidth' /
             'rfm_job.sh').read_text().splitlines()
    assert '#SBATCH --ntasks=8' in lines
    assert '#SBATCH --ntasks-per-node=4' in lines
    assert ('srun --mpi=pmix nvbandwidth -t '
            'multinode_device_to_device_memcpy_read_ce -i 10') in lines
    assert re.search(rf'OK \] \(\s*\d+/\d+\) GpuFabricBandwidth /\w+ '
                     rf'@azure:{partition}\+hpcx\n(P: fabric_read_bw_gpu'
                     r'\d: None GB/s\n){8}', out)
    # no multi-node NVLink on ND H100 v5: nothing to measure there
    assert re.search(r'SKIP \] \(\s*\d+/\d+\) GpuFabricBandwidth '
                     r'/\w+ @azure:ndv5\+hpcx \[azure:ndv5 has no '
                     r'multi-node NVLink\]', out)


def test_fabric_bandwidth_runs_inside_each_nvlink_domain_only():
    from scripts.acceptance import nvlink, plan
    nodes = ['gb-1', 'gb-2', 'gb-3', 'gb-4']
    domains = {'gb-1': 'aaaaaaaa-1/1', 'gb-2': 'aaaaaaaa-1/1',
               'gb-3': 'bbbbbbbb-2/1', 'gb-4': 'bbbbbbbb-2/1'}
    [whole_set] = [p for p in plan.phases('azure', 'ndgb200v6', nodes)
                   if p.scope == 'set']
    runs = {p.tag: p.scope_options()
            for p in nvlink.split_set_phase(whole_set, domains)}
    rack = runs['nvlink-aaaaaaaa']
    assert rack[rack.index('-n') + 1] == plan.names_pattern(
        ['OsuCollective', 'NcclMultiNode', 'GpuFabricBandwidth'])
    assert 'GpuFabricBandwidth.num_nodes=2' in rack
    assert 'GpuFabricBandwidth.nvlink_domain=aaaaaaaa-1/1' in rack
    across = runs[nvlink.CROSS_TAG]
    assert 'GpuFabricBandwidth' not in ' '.join(across)
    assert 'GpuFabricBandwidth' not in ' '.join(runs[''])
    # never over a whole partition
    whole = plan.Phase('azure', 'ndgb200v6', 'whole', [])
    assert 'GpuFabricBandwidth' in whole.scope_options()[1]
    assert plan.scope_of('GpuFabricBandwidth') == 'set'
