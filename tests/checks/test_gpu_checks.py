"""The nccl-tests and perftest checks: --dry-run job scripts for the Azure ND
and HB partitions, and real ReFrame runs on the sandbox Slurm.

There is no GPU and no InfiniBand here. The sandbox runs use replay
stand-ins (tests/support/standins: all_reduce_perf & co. print a real nccl-tests
output from rank 0; ib_write_bw & co. keep perftest's TCP handshake and
print a real perftest output), so what these tests prove is the job layout,
the server/client choreography, parsing, per-HCA results and verdicts, not
performance. The sandbox's ndv5 nodes are CPU-only: a test overlay of the
configuration gives them GPUs and HCAs (see overlay_config).
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checks.network import perftest as perftest_check
from checks.parsers import perftest as perftest_parser
from checks.parsers import nccl as nccl_parser
from checks.common import references
from config.systems.azure_skus import SKUS
from tests.support.dry_runs import ANSI, clean_env, dry_run
from tests.support.helpers import (DATA, REPO, STANDINS, benchmark_rows,
                                   run_reframe, stored_rows)


def job_script(stages, name, params):
    return (stages[(name, params)] / 'rfm_job.sh').read_text()


@pytest.fixture(scope='module')
def ndv5(tmp_path_factory):
    return dry_run(tmp_path_factory.mktemp('ndv5'), 'azure:ndv5')


# -- nccl-tests: job scripts -------------------------------------------------

def test_nccl_single_node_layout_on_ndv5(ndv5):
    stages, _ = ndv5
    script = job_script(stages, 'NcclSingleNode', '%collective=all_reduce')
    for line in ['#SBATCH --ntasks=8', '#SBATCH --ntasks-per-node=8',
                 '#SBATCH --gres=gpu:8', '#SBATCH --partition=ndv5',
                 'for f in /opt/microsoft/ndv5/topo.xml '
                 '/opt/microsoft/ndv5-topo.xml; do if [ -e "$f" ]; then '
                 'export NCCL_TOPO_FILE="$f"; break; fi; done; echo '
                 '"${NCCL_TOPO_FILE:-}" > clusterproof_nccl_topo_file.txt',
                 'export CUDA_DEVICE_ORDER=PCI_BUS_ID',
                 'export NCCL_IB_PCI_RELAXED_ORDERING=1',
                 'export NCCL_SOCKET_IFNAME=eth0',
                 'export OMPI_MCA_coll_hcoll_enable=0',
                 'export NCCL_DEBUG=INFO',
                 'export NCCL_DEBUG_SUBSYS=INIT,NET',
                 'export PATH=/opt/nccl-tests/build:$PATH',
                 'srun --mpi=pmix --distribution=block:block --cpu-bind=ldoms '
                 'all_reduce_perf '
                 '-b 8 -e 16G -f 2 -g 1']:
        assert line in script.splitlines(), line
    # ND H100 v5 declares no GPU order of its own
    assert 'CUDA_VISIBLE_DEVICES' not in script


def test_nccl_the_health_checks_method_on_ndv5(ndv5):
    # azurehpc-health-checks 0e0a1ac, customTests/azure_nccl_allreduce.nhc:
    # all_reduce_perf -b S -e S -f 2 -g 1 -c 1 with -x NCCL_TOPO_FILE= and
    # its own -x variables; conf/nd96isr_h100_v5.conf: 460.0 at 16G
    stages, _ = ndv5
    script = job_script(stages, 'NcclHealthCheckAllReduce',
                        '%collective=all_reduce')
    lines = script.splitlines()
    assert 'export NCCL_TOPO_FILE=' in lines
    assert 'clusterproof_nccl_topo_file.txt' not in script
    assert srun_line(script).endswith(
        ' all_reduce_perf -b 16G -e 16G -f 2 -g 1 -c 1')
    for line in ('export UCX_TLS=tcp', 'export UCX_NET_DEVICES=eth0',
                 'export NCCL_IB_PCI_RELAXED_ORDERING=1',
                 'export CUDA_DEVICE_ORDER=PCI_BUS_ID',
                 'export NCCL_SOCKET_IFNAME=eth0',
                 'export OMPI_MCA_coll_hcoll_enable=0'):
        assert line in lines, line
    # the recipes' tuning is not the health checks' method
    assert 'NCCL_MIN_NCHANNELS' not in script
    assert 'CUDA_VISIBLE_DEVICES' not in script


@pytest.fixture(scope='module')
def ndv4_health_checks(tmp_path_factory):
    return dry_run(tmp_path_factory.mktemp('ndv4'), 'azure:ndv4', '-n',
                   'NcclHealthCheck|NcclSingleNode%collective=all_reduce')


def test_nccl_the_health_checks_method_on_nd_a100(ndv4_health_checks):
    # azurehpc-health-checks 0e0a1ac, conf/nd96amsr_a100_v4.conf line 57:
    # check_nccl_allreduce 228.0 1 16G (the ndv4 partition is the 80 GB
    # size; nd96asr_v4.conf line 57 says 8G), run by
    # customTests/azure_nccl_allreduce.nhc with -x NCCL_TOPO_FILE=
    stages, stdout = ndv4_health_checks
    script = job_script(stages, 'NcclHealthCheckAllReduce',
                        '%collective=all_reduce')
    lines = script.splitlines()
    assert 'export NCCL_TOPO_FILE=' in lines
    assert 'clusterproof_nccl_topo_file.txt' not in script
    # the health checks give no GPU order; the ND A100 sweep has one
    assert srun_line(script).endswith(
        'ldoms all_reduce_perf -b 16G -e 16G -f 2 -g 1 -c 1')
    assert 'CUDA_VISIBLE_DEVICES' not in script
    assert 'NCCL_IGNORE_CPU_AFFINITY' not in script   # the image's tuning
    blocks = [b for b in stdout.split('[ ') if b.lstrip().startswith('OK')]
    judged = next(b for b in blocks if 'NcclHealthCheckAllReduce' in b)
    assert 'avg_busbw: None GB/s (r:228.0, l:0.0, u:None)' in judged
    sweep = next(b for b in blocks if 'NcclSingleNode' in b)
    assert 'avg_busbw: None GB/s (r:228.0, l:None, u:None)' in sweep
    assert 'NCCL_TOPO_FILE="$f"' in job_script(stages, 'NcclSingleNode',
                                              '%collective=all_reduce')
    a40 = references.entries('nccl', 'Standard_ND96asr_v4')['azhc']
    assert (a40['method']['size'], a40['avg_busbw']['value']) == ('8G',
                                                                  228.0)


def test_nccl_ib_loopback_as_the_health_checks_run_it(ndv4_health_checks):
    # conf/nd96amsr_a100_v4.conf line 66: check_nccl_allreduce_ib_loopback
    # 18.0 1 16G $AZ_NHC_ROOT/topofiles/ndv4-topo.xml, run by
    # customTests/azure_nccl_allreduce_ib_loopback.nhc: -x
    # NCCL_NET_GDR_LEVEL=5 -x NCCL_TOPO_FILE=$TOPOFILE -x
    # NCCL_SHM_DISABLE=1 -x NCCL_P2P_DISABLE=1, -b S -f 2 -g 1 -e S -c 1
    stages, stdout = ndv4_health_checks
    script = job_script(stages, 'NcclHealthCheckIbLoopback',
                        '%collective=all_reduce')
    lines = script.splitlines()
    for line in ('export NCCL_NET_GDR_LEVEL=5', 'export NCCL_SHM_DISABLE=1',
                 'export NCCL_P2P_DISABLE=1', 'export UCX_TLS=tcp',
                 'export CUDA_DEVICE_ORDER=PCI_BUS_ID',
                 '#SBATCH --ntasks=8'):
        assert line in lines, line
    # the conf's topology file: the image's, which this script does use
    assert ('for f in /opt/microsoft/ndv4/topo.xml '
            '/opt/microsoft/ndv4-topo.xml; do') in script
    assert 'export NCCL_TOPO_FILE=' not in lines
    assert srun_line(script).endswith(
        'ldoms all_reduce_perf -b 16G -e 16G -f 2 -g 1 -c 1')
    assert 'CUDA_VISIBLE_DEVICES' not in script
    block = stdout.split('NcclHealthCheckIbLoopback %collective=all_reduce'
                         )[-1].split('[ ')[0]
    assert 'avg_busbw: None GB/s (r:18.0, l:0.0, u:None)' in block
    # through the HCAs on one VM: no NVLink run or sweep meets this floor
    assert '(r:18.0' not in stdout.split('NcclHealthCheckIbLoopback')[0]
    a100 = 'Standard_ND96amsr_A100_v4'
    method = {'collective': 'all_reduce', 'size': '16G', 'min_size': '16G',
              'topo_file': 'image', 'algo': 'default'}
    assert references.find('nccl', 'avg_busbw', a100, method, 1,
                           'ib').reference.value == 18.0
    assert references.find('nccl', 'avg_busbw', a100, method, 1,
                           'nvlink').label == 'azhc'
    a40 = references.entries('nccl', 'Standard_ND96asr_v4')[
        'azhc_ib_loopback']
    assert (a40['method']['size'], a40['avg_busbw']['value']) == ('8G', 18.0)


def test_nccl_ib_loopback_only_where_the_health_checks_run_it(ndv5):
    _, stdout = ndv5
    assert re.search(r'\[\s*SKIP\s*\] \(\s*\d+/\d+\) NcclHealthCheckIbLoopback '
                     r'.*: azurehpc-health-checks run the NCCL IB loopback '
                     r'test on ND A100 v4 only', stdout), stdout


def test_nd_h100_without_infiniband_has_the_health_checks_floors():
    # conf/nd96is_h100_v5.conf: line 29 check_gpu_bw 48 335, line 32
    # check_nccl_allreduce 460.0 1 16G; boost_gpu_clock (azure_common.nhc)
    # locks clocks on nd96isr_h100_v5 only
    sku = 'Standard_ND96is_H100_v5'
    nccl = references.entries('nccl', sku)['azhc']
    assert (nccl['method']['size'], nccl['avg_busbw']['value']) == ('16G',
                                                                    460.0)
    copy = references.entries('nvbandwidth', sku)['azhc']
    assert copy['method']['locked_clock_mhz'] == 'none'
    assert (copy['h2d_bw']['value'], copy['d2h_bw']['value'],
            copy['p2p_read_bw']['value']) == (48.0, 48.0, 335.0)


def test_nccl_every_collective_both_layouts(ndv5):
    stages, _ = ndv5
    for name in ('NcclSingleNode', 'NcclMultiNode'):
        for collective in ('all_reduce', 'all_gather', 'reduce_scatter',
                           'alltoall', 'sendrecv'):
            script = job_script(stages, name, f'%collective={collective}')
            assert f' {collective}_perf -b 8 -e 16G' in script
    multi = job_script(stages, 'NcclMultiNode', '%collective=sendrecv')
    assert '#SBATCH --ntasks=16' in multi
    assert '#SBATCH --ntasks-per-node=8' in multi


def test_nccl_references_follow_the_sku(ndv5):
    _, stdout = ndv5
    blocks = [b for b in stdout.split('[ ') if b.lstrip().startswith('OK')]
    single = next(b for b in blocks
                  if 'NcclSingleNode %collective=all_reduce' in b)
    # the health checks' floor is of their one-size run: a sweep is shown
    # beside it, unjudged (its smallest size and topology file differ)
    assert 'avg_busbw: None GB/s (r:460.0, l:None, u:None)' in single
    assert '(r:460.0, l:0.0' not in single
    judged = next(b for b in blocks if 'NcclHealthCheckAllReduce' in b)
    assert 'avg_busbw: None GB/s (r:460.0, l:0.0, u:None)' in judged
    gather = next(b for b in blocks
                  if 'NcclSingleNode %collective=all_gather' in b)
    assert 'r:' not in gather  # nothing published for all_gather
    # [AIInfra]'s multi-node figure was measured on 8 VMs: a 2-VM run is
    # another measurement and is shown against nothing
    multi = next(b for b in blocks
                 if 'NcclMultiNode %collective=all_reduce' in b)
    assert 'r:' not in multi


def test_nccl_ndv4_gpu_order_and_topology(tmp_path):
    stages, _ = dry_run(tmp_path, 'azure:ndv4', '-n', 'NcclSingleNode')
    script = job_script(stages, 'NcclSingleNode', '%collective=all_reduce')
    # the GPU order of the seed post's ND A100 v4 command line, set inside
    # the step: srun --gres rewrites an exported CUDA_VISIBLE_DEVICES
    assert ('srun --mpi=pmix --distribution=block:block --cpu-bind=ldoms env '
            'CUDA_VISIBLE_DEVICES=2,3,0,1,6,7,4,5 all_reduce_perf -b 8 -e 16G '
            '-f 2 -g 1') in script.splitlines()
    assert 'export CUDA_VISIBLE_DEVICES' not in script
    assert ('for f in /opt/microsoft/ndv4/topo.xml '
            '/opt/microsoft/ndv4-topo.xml; do') in script


def test_nccl_multi_node_on_h200_with_overrides(tmp_path):
    stages, _ = dry_run(tmp_path, 'azure:ndh200v5', '-n', 'NcclMultiNode',
                        '-S', 'num_nodes=4', '-S', 'max_bytes=8G',
                        '-S',
                        'nccl_env=NCCL_IB_QPS_PER_CONNECTION:2,'
                        'NCCL_SOCKET_IFNAME:ib0',
                        '-S', 'gpu_binding=0,1,2,3,4,5,6,7',
                        '-S', 'nccl_tests_dir=/shared/nccl-tests/build')
    script = job_script(stages, 'NcclMultiNode', '%collective=all_gather')
    lines = script.splitlines()
    assert '#SBATCH --ntasks=32' in lines
    assert '#SBATCH --ntasks-per-node=8' in lines
    assert 'export NCCL_IB_QPS_PER_CONNECTION=2' in lines
    assert 'export NCCL_SOCKET_IFNAME=ib0' in lines          # overridden
    assert 'export NCCL_SOCKET_IFNAME=eth0' not in lines
    assert 'export PATH=/shared/nccl-tests/build:$PATH' in lines
    assert any(line.endswith('env CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 '
                             'all_gather_perf -b 8 -e 8G -f 2 -g 1')
               for line in lines)


@pytest.mark.parametrize('partition', ['ndgb200v6', 'ndgb300v6'])
def test_nccl_grace_blackwell_layout(tmp_path, partition):
    stages, _ = dry_run(tmp_path, f'azure:{partition}', '-n', 'NcclSingleNode')
    script = job_script(stages, 'NcclSingleNode', '%collective=all_reduce')
    assert '#SBATCH --ntasks=4' in script
    assert '#SBATCH --ntasks-per-node=4' in script
    assert '#SBATCH --gres=gpu:4' in script
    assert 'NCCL_TOPO_FILE' not in script  # no topology file for these


def test_nccl_not_on_cpu_partitions(tmp_path):
    result = run_reframe('--system', 'azure:hbv4', '-c', 'checks/gpu', '-l',
                         env=clean_env(tmp_path), cwd=str(REPO))
    assert result.returncode == 0, result.stderr
    assert 'Found 0 check(s)' in result.stdout


ND_PARTITIONS = [name for name, sku in SKUS.items()
                 if sku['extras'].get('gpus_per_node')]
assert ND_PARTITIONS, 'no GPU partition in the Azure configuration'


def srun_line(script):
    return next(line for line in script.splitlines()
                if line.startswith('srun '))


@pytest.mark.parametrize('partition', ND_PARTITIONS)
def test_nd_partition_transport_gpu_order_and_osu_flags(tmp_path, partition):
    stages, _ = dry_run(tmp_path, f'azure:{partition}', '-n', 'Nccl|Osu',
                        checks=('checks/gpu/nccl.py', 'checks/network/osu.py'))
    binding = SKUS[partition]['extras'].get('gpu_binding')
    nccl_scripts = [(stages[key] / 'rfm_job.sh').read_text()
                    for key in stages
                    if key[0] in ('NcclSingleNode', 'NcclMultiNode')]
    assert len(nccl_scripts) == 10  # 5 collectives x one VM / several VMs
    for script in nccl_scripts:
        lines = script.splitlines()
        # NCCL logs its network and transport choices for the parser
        assert 'export NCCL_DEBUG=INFO' in lines
        assert 'export NCCL_DEBUG_SUBSYS=INIT,NET' in lines
        # the GPU order, where the SKU has one, is set inside the step
        assert 'export CUDA_VISIBLE_DEVICES' not in script
        launch = srun_line(script)
        if binding:
            assert f' env CUDA_VISIBLE_DEVICES={binding} ' in launch
        else:
            assert 'CUDA_VISIBLE_DEVICES' not in launch
    # OMB: point-to-point places both buffers (D D), collectives take -d only
    for benchmark in ('osu_latency', 'osu_bw', 'osu_bibw'):
        key = ('OsuPointToPoint', f'%buffer=cuda %benchmark={benchmark}')
        assert srun_line(job_script(stages, *key)).endswith(
            f'{benchmark} -d cuda D D')
    # collectives: every core a rank, pinned, warm-up and iterations, and
    # OMB's validation with a datatype that validates
    for benchmark in ('osu_allreduce', 'osu_alltoall'):
        key = ('OsuCollective', f'%buffer=cuda %benchmark={benchmark}')
        assert srun_line(job_script(stages, *key)).endswith(
            f'{benchmark} -x 100 -i 1000 -c -T mpi_int -d cuda')
        host = ('OsuCollective', f'%buffer=cpu %benchmark={benchmark}')
        script = job_script(stages, *host)
        assert srun_line(script).endswith(
            f' {benchmark} -x 100 -i 1000 -c -T mpi_int')
        assert '--cpu-bind=cores' in srun_line(script)
        assert '#SBATCH --ntasks-per-node=' in script


def test_nccl_gb300_multinode_references_follow_the_fabric(tmp_path):
    blocks = {}
    for fabric in ('', 'ib'):  # '' = the partition's: MNNVL in one rack
        # the intra-rack figure is of one 18-VM rack; the inter-rack one
        # states no node count
        options = ('-S', f'fabric={fabric}') if fabric else (
            '-S', 'num_nodes=18')
        _, stdout = dry_run(tmp_path / (fabric or 'default'),
                            'azure:ndgb300v6',
                            '-n', 'NcclMultiNode%collective=all_reduce',
                            *options)
        blocks[fabric or 'mnnvl'] = stdout
    # intra-rack NVLink and inter-rack InfiniBand figures, never swapped,
    # and without a verdict (typical figures)
    assert 'busbw: None GB/s (r:937.0, l:None, u:None)' in blocks['mnnvl']
    assert 'busbw: None GB/s (r:200.0, l:None, u:None)' in blocks['ib']


def test_nccl_reference_keys():
    from checks.gpu import nccl as nccl_check
    assert nccl_check.UNCHECKED == 'off'
    h100 = 'Standard_ND96isr_H100_v5'
    at_16g = {'collective': 'all_reduce', 'size': '16G', 'min_size': '8',
              'topo_file': 'image', 'algo': 'default'}
    azhc = {**at_16g, 'min_size': '16G', 'topo_file': 'none'}
    floor = references.find('nccl', 'avg_busbw', h100, azhc, 1, 'nvlink')
    assert floor.reference.value == 460.0 and floor.same_method
    swept = references.find('nccl', 'avg_busbw', h100, at_16g, 1, 'nvlink')
    assert swept.differences == ('min_size 8 (reference: 16G)',
                                 'topo_file image (reference: none)')
    # the Guide's typical figure is in-place at 8G: a 16G sweep is shown
    # beside it, unjudged, as is an 8G sweep (the Guide does not say its
    # topology file or algorithm)
    typical = references.find('nccl', 'busbw_inplace', h100, at_16g, 1,
                              'nvlink')
    assert typical.reference.value == 478.87
    assert typical.differences == ('size 16G (reference: 8G)',
                                   'min_size 8 (reference: 1K)')
    assert references.find('nccl', 'busbw_inplace', h100,
                           {**at_16g, 'size': '8G', 'min_size': '1K'}, 1,
                           'nvlink').differences == ()
    # another node count or fabric is another measurement
    assert references.find('nccl', 'busbw', h100, at_16g, 2, 'ib') is None
    assert references.find('nccl', 'busbw', h100, at_16g, 8,
                           'ib').reference.value == 450.0
    assert references.find('nccl', 'busbw', h100, at_16g, 1, 'ib') is None


# -- perftest: job scripts ---------------------------------------------------

def test_perftest_pair_on_ndv5_uses_gpu_memory_per_hca(ndv5):
    stages, stdout = ndv5
    stage = stages[('PerftestPair', '%benchmark=ib_write_bw')]
    script = (stage / 'rfm_job.sh').read_text().splitlines()
    assert '#SBATCH --ntasks=2' in script
    assert '#SBATCH --ntasks-per-node=1' in script
    assert '#SBATCH --gres=gpu:8' in script
    # the run, then the node probe after it (checks/common/node_probe.py)
    assert script[-2] == 'bash perftest_hcas.sh'
    assert 'clusterproof_node_probe.sh after' in script[-1]
    pairs = (stage / 'perftest_hcas.sh').read_text()
    assert "STEP_OPTIONS=--gres=gpu:8" in pairs
    assert 'client=${nodes[1]}' in pairs
    assert 'trap stop_servers EXIT' in pairs
    for i in range(8):
        # GPU i with HCA i, 8 MiB messages, one port per HCA
        assert (f'pair mlx5_ib{i} {18515 + i} ib_write_bw -d mlx5_ib{i} '
                f'-p {18515 + i} -F -s 8388608 --report_gbits '
                f'--perform_warm_up --use_cuda={i} &\n') in pairs
    # every HCA at once, as the health checks' GDR test runs them
    assert pairs.endswith('\nwait\n')
    # a perf variable per HCA
    for i in range(8):
        assert f'P: bw_avg_mlx5_ib{i}: None Gb/s' in stdout


def test_perftest_loopback_references_on_ndv5(ndv5):
    _, stdout = ndv5
    block = stdout.split('PerftestLoopback %benchmark=ib_write_bw')[-1]
    assert 'bw_avg_mlx5_ib7: None Gb/s (r:380.0, l:0.0, u:None)' in block


def test_perftest_loopback_on_hbv4_host_memory(tmp_path):
    stages, stdout = dry_run(tmp_path, 'azure:hbv4', '-n', 'Perftest')
    stage = stages[('PerftestLoopback', '%benchmark=ib_write_bw')]
    script = (stage / 'rfm_job.sh').read_text()
    assert '#SBATCH --ntasks=1\n' in script
    assert '--gres' not in script
    pairs = (stage / 'perftest_hcas.sh').read_text()
    assert 'client=$server' in pairs
    assert ('pair mlx5_ib0 18515 ib_write_bw -d mlx5_ib0 -p 18515 -F '
            '-s 1048576 --report_gbits --perform_warm_up -q 2 -D 10\n') \
        in pairs
    assert '\nwait' not in pairs   # one HCA after another
    assert 'use_cuda' not in pairs
    assert 'bw_avg_mlx5_ib0: None Gb/s (r:390.0, l:0.0, u:None)' in stdout
    latency = (stages[('PerftestPair', '%benchmark=ib_send_lat')]
               / 'perftest_hcas.sh').read_text()
    assert 'pair mlx5_ib0 18515 ib_send_lat -d mlx5_ib0 -p 18515 -F\n' \
        in latency


def test_perftest_every_hca_of_hbv5(tmp_path):
    stages, _ = dry_run(tmp_path, 'azure:hbv5', '-n', 'PerftestPair',
                        '-S', 'all_sizes=true', '-S', 'bidirectional=true')
    pairs = (stages[('PerftestPair', '%benchmark=ib_send_bw')]
             / 'perftest_hcas.sh').read_text()
    assert [line.split()[1] for line in pairs.splitlines()
            if line.startswith('pair ')] == [f'mlx5_ib{i}' for i in range(4)]
    assert ('ib_send_bw -d mlx5_ib3 -p 18518 -F -a --report_gbits '
            '--perform_warm_up -q 2 -b\n') in pairs


def test_pair_script_is_valid_bash(ndv5):
    stages, _ = ndv5
    for (name, _), stage in stages.items():
        if name.startswith('Perftest'):
            subprocess.run(['bash', '-n', str(stage / 'perftest_hcas.sh')],
                           check=True)


# -- perftest: pure helpers --------------------------------------------------

def test_size_labels():
    assert perftest_check.size_label(8388608) == '8M'
    assert perftest_check.size_label(1048576) == '1M'
    assert perftest_check.size_label(65536) == '64K'
    assert perftest_check.size_label(2) == '2'


def test_per_hca_result_names_the_bad_hca():
    good = perftest_parser.parse(
        (DATA / 'perftest' / 'ib_write_bw_ndr-cx7-b2b-gbits.out').read_text())
    cut = perftest_parser.parse('\n'.join(
        (DATA / 'perftest' / 'ib_write_bw_ndr-cx7-b2b-gbits.out')
        .read_text().splitlines()[:16]))
    combined = perftest_check.per_hca_result({'mlx5_ib0': good,
                                              'mlx5_ib1': cut})
    assert not combined.ok
    assert combined.reason.startswith('mlx5_ib1: no result table')
    assert combined.value('bw_avg_mlx5_ib0') == 392.34
    assert 'bw_avg_mlx5_ib1' not in combined.metrics
    both = perftest_check.per_hca_result({'mlx5_ib0': good, 'mlx5_ib1': good})
    assert both.ok and both.value('bw_peak_mlx5_ib1') == 392.38


def test_job_note():
    assert perftest_check.job_note(
        'x\nclusterproof: the mlx5_ib2 server on n1 did not listen\n') == \
        'the mlx5_ib2 server on n1 did not listen'
    assert perftest_check.job_note('Couldn\'t connect to n1:18515') is None


# -- real runs on the sandbox Slurm, with replay stand-ins -------------------

OVERLAY = '''\
"""Test overlay: the sandbox's CPU-only ndv5 nodes get {gpus} pretend GPUs and
two pretend HCAs, hbv4 one HCA, so that the GPU and perftest checks select
them; everything else is config/config.py."""
import copy

from config.config import site_configuration as _base
from config.systems.nccl_recipes import nccl_extras

site_configuration = copy.deepcopy(_base)
for _system in site_configuration['systems']:
    if _system['name'] != 'sandbox':
        continue
    for _part in _system['partitions']:
        if _part['name'] == 'ndv5':
            _part['features'] = ['gpu']
            _part['extras'].update(
                gpus_per_node={gpus}, ib_hcas=['mlx5_ib0', 'mlx5_ib1'],
                **nccl_extras('ndv5'))
        elif _part['name'] == 'hbv4':
            _part['extras'].update(ib_hcas=['mlx5_ib0'])
'''


def overlay_config(tmp_path, gpus):
    path = tmp_path / f'sandbox_gpus{gpus}.py'
    path.write_text(OVERLAY.format(gpus=gpus))
    return path


def free_port_base(count=4):
    """A base port with `count` free ports after it: test runs sharing this
    host must not meet each other's perftest servers."""
    import socket
    while True:
        with socket.socket() as probe:
            probe.bind(('', 0))
            base = probe.getsockname()[1]
        if base + count >= 65536:
            continue
        try:
            sockets = [socket.create_server(('', base + i))
                       for i in range(count)]
        except OSError:
            continue
        for sock in sockets:
            sock.close()
        return base


def run_on_sandbox(tmp_path, slurm_sandbox, partition, gpus, *args, **env):
    if any('perftest' in arg for arg in args):
        args = (*args, '-S', f'base_port={free_port_base()}')
    environ = clean_env(tmp_path, **env)
    environ.update(slurm_sandbox.env)
    environ['PATH'] = f'{STANDINS}{os.pathsep}{os.environ["PATH"]}'
    environ['PYTHONPATH'] = str(REPO)  # the overlay imports config.config
    # the overlay replaces config/config.py (which it imports)
    argv = [str(Path(sys.executable).parent / 'reframe'),
            '-C', str(overlay_config(tmp_path, gpus)),
            '--system', f'sandbox:{partition}', *args, '-r',
            '--prefix', str(tmp_path / 'rfm')]
    result = subprocess.run(argv, env=environ, cwd=str(REPO),
                            capture_output=True, text=True, timeout=600)
    return result, ANSI.sub('', result.stdout + result.stderr)


def sanity_error_on_sandbox(tmp_path, slurm_sandbox, partition, gpus, *args,
                            **env):
    """A sandbox run that must fail its sanity check: what ReFrame printed
    after 'sanity error: '."""
    result, output = run_on_sandbox(tmp_path, slurm_sandbox, partition, gpus,
                                    *args, **env)
    assert result.returncode != 0, output
    assert 'sanity error: ' in output, output
    return output.split('sanity error: ', 1)[1]


NCCL_MULTI_GATHER = ('-c', 'checks/gpu/nccl.py',
                     '-n', 'NcclMultiNode%collective=all_gather')


def perf_values(output):
    return {m[1]: float(m[2])
            for m in re.finditer(r'P: (\w+): ([\d.]+) ', output)}


GB10 = str(DATA / 'nccl-tests' /
           'all_gather_gb10-dgxspark-2node-v2.18.3-1G-4G.out')
# Real NCCL INFO logs the stand-in prints before the table
NCCL_LOGS = DATA / 'nccl-tests' / 'info'
NVLINK_LOG = str(NCCL_LOGS / 'nvls_h800-1node-8gpu-g8-nccl2.18.3-trimmed.out')
IB_GDR_LOG = str(NCCL_LOGS / 'ib-gdr_8gpu-2node-nccl2.27.5-excerpt.log')
SOCKET_LOG = str(NCCL_LOGS / 'socket_v100-2node-nccl2.7.8.log')


def test_nccl_single_node_on_sandbox(tmp_path, slurm_sandbox):
    # 2 pretend GPUs -> 2 ranks; the GB10 sample has exactly 2 ranks
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 2,
        '-c', 'checks/gpu/nccl.py', '-n', 'NcclSingleNode',
        CLUSTERPROOF_REPLAY_NCCL=GB10, CLUSTERPROOF_REPLAY_NCCL_LOG=NVLINK_LOG)
    assert result.returncode == 0, output
    assert 'Ran 5/5 test case(s)' in output and '0 failure(s)' in output
    # a sweep's all_reduce is shown beside the ND H100 v5 floor of the
    # health checks' one-size run, never judged by it (a GB10 replay is far
    # below it)
    assert 'avg_busbw: 21.4033 GB/s (r:460.0, l:None, u:None)' in output
    assert output.count('P: avg_busbw: 21.4033 GB/s') == 5
    assert output.count('P: busbw_inplace: 22.46 GB/s') == 5
    assert output.count('P: latency_small: 27211.0 us') == 5
    script = next((tmp_path / 'rfm').rglob('rfm_job.sh')).read_text()
    assert '#SBATCH --ntasks=2' in script
    # the image's topology files are not on the sandbox: none is exported
    assert 'for f in /opt/microsoft/ndv5/topo.xml' in script
    # the NCCL the log names is in the rows' fingerprint
    rows = benchmark_rows(stored_rows(tmp_path / 'home'))
    assert {row['nccl_version'] for row in rows} == {'2.18.3+cuda12.2'}


def test_nccl_multi_node_on_sandbox(tmp_path, slurm_sandbox):
    # 2 nodes x 1 pretend GPU: the GB10 sample's own layout
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 1, *NCCL_MULTI_GATHER,
        CLUSTERPROOF_REPLAY_NCCL=GB10, CLUSTERPROOF_REPLAY_NCCL_LOG=IB_GDR_LOG)
    assert result.returncode == 0, output
    assert perf_values(output)['busbw'] == 22.14


def test_nccl_socket_fallback_fails_on_sandbox(tmp_path, slurm_sandbox):
    # the same numbers, but NCCL's log says the VMs talked over TCP
    error = sanity_error_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 1, *NCCL_MULTI_GATHER,
        CLUSTERPROOF_REPLAY_NCCL=GB10, CLUSTERPROOF_REPLAY_NCCL_LOG=SOCKET_LOG)
    assert error.startswith('NCCL fell back to sockets (TCP, no InfiniBand): '
                            '8 x NET/Socket')


def test_nccl_without_info_log_is_unproven_on_sandbox(tmp_path,
                                                      slurm_sandbox):
    error = sanity_error_on_sandbox(tmp_path, slurm_sandbox, 'ndv5', 1,
                                    *NCCL_MULTI_GATHER,
                                    CLUSTERPROOF_REPLAY_NCCL=GB10)
    assert error.startswith('no NCCL INFO lines in the output')


def test_nccl_gpu_order_reaches_the_program(tmp_path, slurm_sandbox):
    # what the stand-in received inside the job step, per rank
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 2,
        '-c', 'checks/gpu/nccl.py',
        '-n', 'NcclSingleNode%collective=all_gather',
        '-S', 'gpu_binding=1,0',
        CLUSTERPROOF_REPLAY_NCCL=GB10, CLUSTERPROOF_REPLAY_NCCL_LOG=NVLINK_LOG)
    assert result.returncode == 0, output
    stderr = next((tmp_path / 'rfm').rglob('rfm_job.err')).read_text()
    for rank in (0, 1):
        assert (f'all_gather_perf stand-in (rank {rank}): '
                'CUDA_VISIBLE_DEVICES=1,0 NCCL_DEBUG=INFO '
                'NCCL_DEBUG_SUBSYS=INIT,NET args: -b 8 -e 16G -f 2 -g 1'
                ) in stderr


def test_nccl_fewer_ranks_than_asked_fails(tmp_path, slurm_sandbox):
    # 2 nodes x 2 pretend GPUs = 4 ranks asked; the replay shows 2
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 2,
        '-c', 'checks/gpu/nccl.py', '-n', 'NcclMultiNode%collective=sendrecv',
        CLUSTERPROOF_REPLAY_NCCL=GB10)
    assert result.returncode != 0
    assert 'sanity error: ran on 2 ranks, expected 4' in output


CUDA_REPLAY = str(DATA / 'perftest' /
                  'ib_write_bw_a-cuda-dmabuf-h200-roce-gbits.out')
HOST_SLOW_REPLAY = str(DATA / 'perftest' / 'ib_read_bw_a-mlx4-fdr-MBsec.out')


def test_perftest_pair_per_hca_on_sandbox(tmp_path, slurm_sandbox):
    # GPU memory on the pretend GPUs: mlx5_ib0 replays a real CUDA run
    # (over RoCE, hence link_type=Ethernet), mlx5_ib1 a host-memory one,
    # which must not pass for a GPUDirect measurement
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 2,
        '-c', 'checks/network/perftest.py', '-S', 'link_type=Ethernet',
        '-n', 'PerftestPair%benchmark=ib_write_bw',
        CLUSTERPROOF_REPLAY_PERFTEST_MLX5_IB0=CUDA_REPLAY,
        CLUSTERPROOF_REPLAY_PERFTEST_MLX5_IB1=HOST_SLOW_REPLAY)
    assert result.returncode != 0, output
    assert ('sanity error: mlx5_ib1: GPU memory was asked for, but perftest '
            'reports no GPU buffer') in output
    assert 'mlx5_ib0:' not in output.split('sanity error:')[-1]
    stage = next((tmp_path / 'rfm').rglob('perftest_hcas.sh')).parent
    assert '--use_cuda=1' in (stage / 'perftest_hcas.sh').read_text()
    # each server ran on the first node and was reached by its client
    assert 'Waiting for client to connect' in \
        (stage / 'mlx5_ib1.server.out').read_text()


def test_perftest_gpu_memory_off_takes_host_memory(tmp_path, slurm_sandbox):
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 2,
        '-c', 'checks/network/perftest.py', '-S', 'gpu_memory=off',
        '-n', 'PerftestPair%benchmark=ib_write_bw',
        CLUSTERPROOF_REPLAY_PERFTEST_MLX5_IB1=HOST_SLOW_REPLAY)
    assert result.returncode == 0, output  # no two-node figure for H100 v5
    values = perf_values(output)
    assert values['bw_avg_mlx5_ib0'] == 392.34
    assert values['bw_avg_mlx5_ib1'] == 30.7563  # 3666.44 MiB/s


def test_perftest_over_roce_is_not_infiniband(tmp_path, slurm_sandbox):
    error = sanity_error_on_sandbox(
        tmp_path, slurm_sandbox, 'hbv4', 2,
        '-c', 'checks/network/perftest.py',
        '-n', 'PerftestLoopback%benchmark=ib_write_bw',
        CLUSTERPROOF_REPLAY_PERFTEST=CUDA_REPLAY)
    assert error.startswith('mlx5_ib0: link type Ethernet, expected IB')


def test_perftest_rows_carry_device_and_peak(tmp_path, slurm_sandbox):
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'hbv4', 2,
        '-c', 'checks/network/perftest.py', '-S', 'hcas=mlx5_ib0,mlx5_ib1',
        '-n', 'PerftestLoopback%benchmark=ib_write_bw')
    assert result.returncode == 0, output
    rows = [row for row in benchmark_rows(stored_rows(tmp_path / 'home'))
            if row['check_name'].startswith('PerftestLoopback')]
    by_device = {(row['check_perf_var'], row['device']): row for row in rows}
    # -D 10, as the health checks run it: perftest measures no peak then
    assert set(by_device) == {('bw_avg', hca)
                              for hca in ('mlx5_ib0', 'mlx5_ib1')}
    row = by_device[('bw_avg', 'mlx5_ib1')]
    assert row['check_perf_value'] == 392.34
    assert row['check_perf_unit'] == 'Gb/s'
    assert row['check_perf_ref'] == 390.0           # [AzHC] floor, HB176rs_v4
    assert row['check_perf_result'] == 'pass'
    assert row['reference_key'] == (
        'bw_avg|HB176rs_v4|all_hcas=false,bidir=false,duration=10,'
        'gdr=false,layout=loopback,qps=2,size=1M,test=ib_write_bw|1n|-')
    assert row['check_perf_peak'] == 400.0          # NDR line rate per HCA
    assert row['peak_source'].startswith('NDR InfiniBand, 400 Gb/s (Microsoft')


def test_perftest_bidirectional_peak_is_both_directions(tmp_path,
                                                        slurm_sandbox):
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'hbv4', 2,
        '-c', 'checks/network/perftest.py', '-S', 'bidirectional=true',
        '-n', 'PerftestLoopback%benchmark=ib_send_bw')
    assert result.returncode == 0, output
    rows = [row for row in stored_rows(tmp_path / 'home')
            if row['check_perf_var'] == 'bw_avg']
    assert [(row['device'], row['check_perf_peak']) for row in rows] == \
        [('mlx5_ib0', 800.0)]
    assert rows[0]['peak_source'].endswith('x 2 directions (-b)')


def test_perftest_loopback_names_the_slow_hca(tmp_path, slurm_sandbox):
    slow = str(DATA / 'perftest' / 'ib_read_bw_a-mlx4-fdr-MBsec.out')
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'hbv4', 2,
        '-c', 'checks/network/perftest.py', '-S', 'hcas=mlx5_ib0,mlx5_ib1',
        '-n', 'PerftestLoopback%benchmark=ib_write_bw',
        CLUSTERPROOF_REPLAY_PERFTEST_MLX5_IB1=slow)
    assert result.returncode != 0
    # HB176rs_v4 floor 390 Gb/s: only mlx5_ib1 misses it
    assert ('failed to meet reference(s): bw_avg_mlx5_ib1=30.7563 Gb/s, '
            'expected 390.0') in output
    assert 'bw_avg_mlx5_ib0=' not in output.split('failed to meet')[-1]


def test_perftest_latency_loopback_on_sandbox(tmp_path, slurm_sandbox):
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'hbv4', 2,
        '-c', 'checks/network/perftest.py',
        '-n', 'PerftestLoopback%benchmark=ib_send_lat')
    assert result.returncode == 0, output
    values = perf_values(output)
    assert values['lat_typical_mlx5_ib0'] == 1.47
    assert values['lat_p99_mlx5_ib0'] == 1.57


def _standin_processes(marker):
    """Stand-in processes still alive from the run whose environment holds
    CLUSTERPROOF_STANDIN_RUN=marker (other test runs may share the host)."""
    found = []
    for environ in Path('/proc').glob('[0-9]*/environ'):
        try:
            variables = environ.read_bytes().split(b'\0')
        except OSError:
            continue
        if f'CLUSTERPROOF_STANDIN_RUN={marker}'.encode() in variables:
            found.append(environ.parent.name)
    return found


def test_leftover_detection_sees_marked_processes(tmp_path):
    sleeper = subprocess.Popen(
        ['sleep', '30'], env={**os.environ,
                              'CLUSTERPROOF_STANDIN_RUN': str(tmp_path)})
    try:
        # until the child has exec'd, /proc shows the parent's environment
        deadline = time.monotonic() + 10
        while (not _standin_processes(str(tmp_path))
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert _standin_processes(str(tmp_path)) == [str(sleeper.pid)]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_perftest_hca_missing_on_client_node(tmp_path, slurm_sandbox):
    # sb-n2 has only mlx5_ib0: the mlx5_ib1 client fails, its server (on
    # sb-n1, waiting for a client that never comes) must be stopped
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 2,
        '-c', 'checks/network/perftest.py',
        '-S', 'pair_timeout=60', '-S', 'gpu_memory=off',
        '-n', 'PerftestPair%benchmark=ib_write_bw',
        CLUSTERPROOF_STANDIN_HCAS_SB_N2='mlx5_ib0',
        CLUSTERPROOF_STANDIN_RUN=str(tmp_path))
    assert result.returncode != 0
    assert ('sanity error: mlx5_ib1: perftest failed: IB device mlx5_ib1 '
            'not found') in output
    assert _standin_processes(str(tmp_path)) == []


def test_perftest_server_that_never_listens(tmp_path, slurm_sandbox):
    result, output = run_on_sandbox(
        tmp_path, slurm_sandbox, 'ndv5', 2,
        '-c', 'checks/network/perftest.py',
        '-S', 'hcas=mlx5_ib0,mlx5_ib9',
        '-n', 'PerftestPair%benchmark=ib_send_bw',
        CLUSTERPROOF_STANDIN_HCAS='mlx5_ib0,mlx5_ib1',
        CLUSTERPROOF_STANDIN_RUN=str(tmp_path))
    assert result.returncode != 0
    assert re.search(r'mlx5_ib9: the mlx5_ib9 server on sb-n1 did not '
                     r'listen on port \d+: IB device mlx5_ib9 not found',
                     output)
    assert _standin_processes(str(tmp_path)) == []


def test_standins_say_what_they_are():
    for name in ('all_reduce_perf', 'ib_write_bw'):
        text = (STANDINS / name).read_text()
        assert 'Replay stand-in' in text and 'Nothing is measured' in text
    for name in ('all_gather_perf', 'reduce_scatter_perf', 'alltoall_perf',
                 'sendrecv_perf'):
        assert os.path.realpath(STANDINS / name) == \
            os.path.realpath(STANDINS / 'all_reduce_perf')
    proc = subprocess.run([str(STANDINS / 'alltoall_perf'), '-b', '8',
                           '-e', '16G', '-f', '2', '-g', '1'],
                          capture_output=True, text=True,
                          env={**os.environ, 'SLURM_PROCID': '0'})
    assert 'stand-in' in proc.stderr
    assert nccl_parser.parse(proc.stdout).ok
    # it checks its own command line and the files it replays
    wrong = subprocess.run([str(STANDINS / 'alltoall_perf'), '-x'],
                           capture_output=True, text=True)
    assert wrong.returncode == 2 and wrong.stdout == ''
    assert 'not an nccl-tests command line: -x' in wrong.stderr
    missing = subprocess.run(
        [str(STANDINS / 'alltoall_perf'), '-b', '8', '-e', '8', '-f', '2',
         '-g', '1'], capture_output=True, text=True,
        env={**os.environ, 'SLURM_PROCID': '0',
             'CLUSTERPROOF_REPLAY_NCCL_LOG': '/nonexistent/nccl.log'})
    assert missing.returncode == 2
    assert 'cannot read /nonexistent/nccl.log' in missing.stderr


SLURM_COMMAND = re.compile(r'\b(srun|scontrol|sbatch|squeue|salloc|sacct)\b'
                           r'|\$\{?SLURM_JOB_NODELIST')


def test_pbs_example_job_scripts_have_no_slurm_command(tmp_path):
    prefix = tmp_path / 'rfm'
    result = run_reframe('--system', 'pbs-example', '-c', 'checks', '-R',
                         '--dry-run', '--prefix', str(prefix),
                         env=clean_env(tmp_path), cwd=str(REPO))
    output = ANSI.sub('', result.stdout)
    assert result.returncode == 0, output + result.stderr
    scripts = sorted((prefix / 'stage').rglob('*.sh'))
    names = {path.parent.name.split('_')[0] for path in scripts}
    # the two-node MPI checks run there (mpirun), perftest does not
    assert {'OsuPointToPoint', 'OsuCollective'} <= names
    assert not any(name.startswith('Perftest') for name in names)
    skipped = re.findall(r'SKIP \] .*? (Perftest\w+) .*@pbs-example:\w+\+\w+ '
                         r'\[.*: Slurm partitions only\]', output)
    assert set(skipped) == {'PerftestPair', 'PerftestLoopback'}
    for path in scripts:
        text = path.read_text()
        assert '#PBS' in text or path.name != 'rfm_job.sh', path
        if path.name == 'rfm_job.sh':
            # the job records its nodes the PBS way (checks/common/job_nodes)
            assert 'sort -u "$PBS_NODEFILE"' in text, path
        found = SLURM_COMMAND.search(text)
        assert found is None, f'{path}: {found[0]}'


def test_osu_gpu_buffers_proven_on_sandbox(tmp_path, slurm_sandbox):
    selection = ('-c', 'checks/network/osu.py',
                 '-n', 'OsuPointToPoint%buffer=cuda%benchmark=osu_bw')
    for run in ('host', 'cuda'):
        (tmp_path / run).mkdir()
    host, output = run_on_sandbox(tmp_path / 'host', slurm_sandbox, 'ndv5',
                                  1, *selection)
    # the stand-in's default osu_bw replay is a host-memory run
    assert host.returncode != 0
    assert ('sanity error: GPU buffers were asked for (-d cuda), but OMB '
            'ran with host buffers') in output
    cuda = str(DATA / 'osu' / 'osu_bw_v7.5_cuda-DD_a100-oci-2node-256MiB.out')
    device, output = run_on_sandbox(tmp_path / 'cuda', slurm_sandbox, 'ndv5',
                                    1, *selection, '-S', 'message_size=268435456',
                                    CLUSTERPROOF_REPLAY_OSU_BW=cuda)
    assert device.returncode == 0, output
    assert perf_values(output)['bandwidth'] == 11962.21
    script = next((tmp_path / 'cuda' / 'rfm').rglob('rfm_job.sh')).read_text()
    assert 'osu_bw -m 268435456 -d cuda D D' in script
