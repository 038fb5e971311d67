"""--dry-run job scripts of the CPU/MPI checks on the Azure HBv4, HBv5 and
ND H100 v5 partitions: launcher lines, task layout, environment, time
limits, binding and the IOR options that keep the page cache out."""
import re

import pytest

from tests.support.helpers import dry_run_job_scripts, only_job_script


def sbatch(script: str) -> set[str]:
    return set(re.findall(r'^#SBATCH (.+)$', script, re.MULTILINE))


def test_stream_uses_every_core_of_hbv5(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv5', '^StreamCheck$',
                             checks='checks/cpu/stream.py')
    assert {'--ntasks=1', '--cpus-per-task=368', '--partition=hbv5',
            '--exclusive'} <= sbatch(script)
    assert 'export OMP_NUM_THREADS=368' in script
    assert 'export OMP_PROC_BIND=true' in script
    assert 'export OMP_PLACES=cores' in script
    assert re.search(r'^srun --cpus-per-task=368 --mpi=pmix stream_c\.exe',
                     script, re.MULTILINE)


def test_stream_on_hbv4_follows_the_health_checks_method(tmp_path):
    # the floor's method: 48 threads on AzHC's place list, the whole node
    script = only_job_script(tmp_path, 'azure:hbv4', '^StreamCheck$',
                             checks='checks/cpu/stream.py')
    assert {'--ntasks=1', '--cpus-per-task=176'} <= sbatch(script)
    assert 'export OMP_NUM_THREADS=48' in script
    assert 'export OMP_PLACES={0:1},{4:1},{8:1},' in script
    assert 'export OMP_SCHEDULE=static' in script


def test_stream_on_hbv3_follows_the_health_checks_method(tmp_path):
    # azure_cpu_stream.nhc (commit 0e0a1ac): 32 threads on HB120rs_v3's list
    script = only_job_script(tmp_path, 'azure:hbv3', '^StreamCheck$',
                             checks='checks/cpu/stream.py')
    assert 'export OMP_NUM_THREADS=32' in script
    assert 'export OMP_PLACES={0:1},{3:1},{8:1},{12:1},' in script
    assert 'export OMP_STACKSIZE=256M' in script


def test_stream_own_method_uses_every_core(tmp_path):
    scripts = dry_run_job_scripts(
        tmp_path, 'azure:hbv4', '-n', '^StreamCheck$', '-S',
        'follow_reference_method=false',
        checks='checks/cpu/stream.py')
    script = next(iter(scripts.values()))
    assert 'export OMP_NUM_THREADS=176' in script
    assert 'export OMP_PLACES=cores' in script


def test_hpl_follows_azures_published_recipe_on_hbv4(tmp_path):
    # Azure/woc-benchmarking hpl_run_scr_hbv4.sh: 88 ranks x 2 threads,
    # P 11 x Q 8, NB 232 (config/systems/sku_facts.yaml)
    script = only_job_script(tmp_path, 'azure:hbv4', '^HplCheck$',
                             checks='checks/cpu/hpl.py')
    assert {'--ntasks=88', '--ntasks-per-node=88', '--cpus-per-task=2',
            '--partition=hbv4'} <= sbatch(script)
    assert 'export OMP_NUM_THREADS=2' in script
    assert re.search(r'^11\s+Ps$', script, re.MULTILINE)
    assert re.search(r'^8\s+Qs$', script, re.MULTILINE)
    assert '/proc/meminfo' in script          # N sized on the node itself
    # ranks pinned to their two cores each
    assert re.search(r'^srun --cpus-per-task=2 --cpu-bind=cores --mpi=pmix '
                     r'xhpl$', script, re.MULTILINE)
    assert re.search(r'^232\s+NBs$', script, re.MULTILINE)
    hours, minutes, _ = time_limit(script)
    assert 1 <= hours <= 12          # sized from N: hours, not forever


def test_hpl_is_flat_where_no_recipe_is_published(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv5', '^HplCheck$',
                             checks='checks/cpu/hpl.py')
    assert {'--ntasks=368', '--ntasks-per-node=368'} <= sbatch(script)
    assert re.search(r'^16\s+Ps$', script, re.MULTILINE)   # 16 x 23 = 368
    # no published recipe names HBv5's BLAS: the generic block size
    assert re.search(r'^256\s+NBs$', script, re.MULTILINE)


def time_limit(script: str) -> tuple[int, int, int]:
    match = re.search(r'^#SBATCH --time=(\d+):(\d+):(\d+)$', script,
                      re.MULTILINE)
    assert match, script
    return tuple(int(part) for part in match.groups())


def test_hpl_block_size_follows_the_blas_family(tmp_path):
    scripts = dry_run_job_scripts(tmp_path, 'azure:hbv4', '-n', '^HplCheck$',
                                  '-S', 'blas_family=openblas',
                                  checks='checks/cpu/hpl.py')
    assert re.search(r'^256\s+NBs$', next(iter(scripts.values())),
                     re.MULTILINE)


@pytest.mark.parametrize('target', ['azure:hbv4', 'azure:ndv5'])
def test_every_check_has_a_time_limit(tmp_path, target):
    scripts = dry_run_job_scripts(tmp_path, target)
    assert len(scripts) >= 8, sorted(scripts)
    missing = [name for name, script in scripts.items()
               if not re.search(r'^#SBATCH --time=\d+:\d+:\d+$', script,
                                re.MULTILINE)]
    assert missing == []


def test_time_limit_can_be_overridden(tmp_path):
    scripts = dry_run_job_scripts(tmp_path, 'azure:hbv4', '-n', '^HplCheck$',
                                  '-S', 'time_limit=45m',
                                  checks='checks/cpu/hpl.py')
    assert time_limit(next(iter(scripts.values()))) == (0, 45, 0)


def test_ior_defeats_the_page_cache(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^IorCheck$',
                             checks='checks/storage/ior.py')
    # two nodes: every task reads what a task of the other node wrote (-C)
    assert {'--ntasks=16', '--ntasks-per-node=8'} <= sbatch(script)
    run = re.search(r'^srun --mpi=pmix ior (.+)$', script, re.MULTILINE)
    options = run.group(1).split()
    assert {'-C', '-e', '-w', '-r', '-F'} <= set(options)
    # each node writes 1.5 x its 768 GiB, phases cut at 300 s (-D)
    segments = int(options[options.index('-s') + 1])
    assert segments * 8 * 2 * 2 ** 20 >= 1.5 * 768 * 2 ** 30
    assert options[options.index('-D') + 1] == '300'
    assert options[options.index('-O') + 1] == 'stoneWallingWearOut=1'
    assert time_limit(script) >= (0, 15, 0)
    # scratch per session and job: two sessions never share files
    assert 'CLUSTERPROOF_JOB_TAG=${SLURM_JOB_ID:-${PBS_JOBID:-$$}}' in script
    assert options[-1].endswith('-${CLUSTERPROOF_JOB_TAG}/test.bin')


def test_ior_o_direct_on_request(tmp_path):
    scripts = dry_run_job_scripts(tmp_path, 'azure:hbv4', '-n', '^IorCheck$',
                                  '-S', 'direct_io=true',
                                  checks='checks/storage/ior.py')
    assert ' --posix.odirect ' in next(iter(scripts.values()))


def test_hpcg_writes_its_input_and_runs_one_rank_per_core(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^HpcgCheck$',
                             checks='checks/cpu/hpcg.py')
    assert '--ntasks=176' in sbatch(script)
    assert 'hpcg.dat' in script
    assert re.search(r'^srun .*--mpi=pmix xhpcg .*--rt=60', script,
                     re.MULTILINE)


def test_osu_latency_is_one_rank_on_each_of_two_nodes(tmp_path):
    script = only_job_script(
        tmp_path, 'azure:hbv4',
        'OsuPointToPoint%buffer=cpu%benchmark=osu_latency',
        checks='checks/network/osu.py')
    assert {'--ntasks=2', '--ntasks-per-node=1'} <= sbatch(script)
    assert 'HPCX_OSU_DIR' in script
    assert re.search(r'^srun --cpu-bind=cores --mpi=pmix osu_latency$', script,
                     re.MULTILINE)
    assert 'UCX_NET_DEVICES' not in script     # one HCA: UCX's own choice


def test_osu_gpu_buffers_on_ndv5_ask_for_gpus(tmp_path):
    script = only_job_script(
        tmp_path, 'azure:ndv5',
        'OsuPointToPoint%buffer=cuda%benchmark=osu_bw',
        checks='checks/network/osu.py')
    assert {'--ntasks=2', '--ntasks-per-node=1', '--gres=gpu:1',
            '--partition=ndv5'} <= sbatch(script)
    assert 'HPCX_OSU_CUDA_DIR' in script
    assert re.search(r'^srun --cpu-bind=cores --mpi=pmix osu_bw -d cuda D D',
                     script, re.MULTILINE)
    # eight HCAs: the pair says which one it talks over (its row's device)
    assert 'export UCX_NET_DEVICES=mlx5_ib0:1' in script


def test_osu_gpu_buffers_are_not_run_on_cpu_partitions(tmp_path):
    from tests.support.helpers import dry_run_job_scripts
    scripts = dry_run_job_scripts(tmp_path, 'azure:hbv4', '-n',
                                  'OsuPointToPoint%buffer=cuda',
                                  checks='checks/network/osu.py')
    assert scripts == {}


def test_osu_allreduce_uses_every_core_of_both_nodes(tmp_path):
    # a collective of one rank per node would be point-to-point traffic:
    # every core of each HBv5 node is a rank, pinned, and OMB validates
    # each result with a datatype that validates
    script = only_job_script(
        tmp_path, 'azure:hbv5',
        'OsuCollective%buffer=cpu%benchmark=osu_allreduce',
        checks='checks/network/osu.py')
    assert {'--ntasks=736', '--ntasks-per-node=368'} <= sbatch(script)
    assert re.search(r'^srun --cpu-bind=cores --mpi=pmix osu_allreduce '
                     r'-x 100 -i 1000 -c -T mpi_int$', script, re.MULTILINE)


def test_hpcc_two_nodes_one_rank_each(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^HpccTwoNodes$',
                             checks='checks/cpu/hpcc.py')
    assert {'--ntasks=2', '--ntasks-per-node=1'} <= sbatch(script)
    assert re.search(r'^srun --cpu-bind=cores --mpi=pmix hpcc$', script,
                     re.MULTILINE)


def test_mpi_stage_copies_then_proves_the_no_copy_path(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^MpiStageCheck$',
                             checks='checks/staging/mpi_stage.py')
    assert {'--ntasks=2', '--ntasks-per-node=1'} <= sbatch(script)
    runs = re.findall(r'^srun --mpi=pmix mpi_stage (.+)$', script,
                      re.MULTILINE)
    assert len(runs) == 2
    assert '--overwrite' in runs[0] and runs[0].endswith('2> first.err')
    assert '--overwrite' not in runs[1] and runs[1].endswith('2> second.err')
    assert all('--source /shared/scratch/' in run and
               '--dest /mnt/nvme/' in run for run in runs)
    assert all('-${CLUSTERPROOF_JOB_TAG}/source.bin' in run for run in runs)
    # the cleanup reaches every node, as the copies did
    assert re.search(r'^srun --mpi=pmix rm -rf /mnt/nvme/clusterproof-'
                     r'mpi-stage-\S+-\$\{CLUSTERPROOF_JOB_TAG\}$', script,
                     re.MULTILINE)
    assert time_limit(script)
