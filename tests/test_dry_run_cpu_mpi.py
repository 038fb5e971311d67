"""--dry-run job scripts of the CPU/MPI checks on the Azure HBv4, HBv5 and
ND H100 v5 partitions: launcher lines, task layout and environment."""
import re

from tests.helpers import only_job_script


def sbatch(script: str) -> set[str]:
    return set(re.findall(r'^#SBATCH (.+)$', script, re.MULTILINE))


def test_stream_uses_every_core_of_hbv5(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv5', '^StreamCheck$')
    assert {'--ntasks=1', '--cpus-per-task=368', '--partition=hbv5',
            '--exclusive'} <= sbatch(script)
    assert 'export OMP_NUM_THREADS=368' in script
    assert 'export OMP_PROC_BIND=true' in script
    assert 'export OMP_PLACES=cores' in script
    assert re.search(r'^srun --cpus-per-task=368 --mpi=pmix stream_c\.exe',
                     script, re.MULTILINE)


def test_hpl_grid_matches_the_tasks_of_hbv4(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^HplCheck$')
    assert {'--ntasks=176', '--ntasks-per-node=176',
            '--partition=hbv4'} <= sbatch(script)
    assert re.search(r'^11\s+Ps$', script, re.MULTILINE)
    assert re.search(r'^16\s+Qs$', script, re.MULTILINE)    # 11 x 16 = 176
    assert '/proc/meminfo' in script          # N sized on the node itself
    assert re.search(r'^srun .*--mpi=pmix xhpl$', script, re.MULTILINE)


def test_hpcg_writes_its_input_and_runs_one_rank_per_core(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^HpcgCheck$')
    assert '--ntasks=176' in sbatch(script)
    assert 'hpcg.dat' in script
    assert re.search(r'^srun .*--mpi=pmix xhpcg .*--rt=60', script,
                     re.MULTILINE)


def test_osu_latency_is_one_rank_on_each_of_two_nodes(tmp_path):
    script = only_job_script(
        tmp_path, 'azure:hbv4',
        'OsuPointToPoint%buffer=cpu%benchmark=osu_latency')
    assert {'--ntasks=2', '--ntasks-per-node=1'} <= sbatch(script)
    assert 'HPCX_OSU_DIR' in script
    assert re.search(r'^srun --mpi=pmix osu_latency$', script, re.MULTILINE)


def test_osu_gpu_buffers_on_ndv5_ask_for_gpus(tmp_path):
    script = only_job_script(
        tmp_path, 'azure:ndv5',
        'OsuPointToPoint%buffer=cuda%benchmark=osu_bw')
    assert {'--ntasks=2', '--ntasks-per-node=1', '--gres=gpu:1',
            '--partition=ndv5'} <= sbatch(script)
    assert 'HPCX_OSU_CUDA_DIR' in script
    assert re.search(r'^srun --mpi=pmix osu_bw -d cuda D D', script,
                     re.MULTILINE)


def test_osu_gpu_buffers_are_not_run_on_cpu_partitions(tmp_path):
    from tests.helpers import dry_run_job_scripts
    scripts = dry_run_job_scripts(tmp_path, 'azure:hbv4', '-n',
                                  'OsuPointToPoint%buffer=cuda')
    assert scripts == {}


def test_osu_allreduce_spans_the_nodes(tmp_path):
    script = only_job_script(
        tmp_path, 'azure:hbv5', 'OsuCollective%buffer=cpu%benchmark=osu_allreduce')
    assert {'--ntasks=2', '--ntasks-per-node=1'} <= sbatch(script)
    assert re.search(r'^srun --mpi=pmix osu_allreduce', script, re.MULTILINE)


def test_hpcc_two_nodes_one_rank_each(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^HpccTwoNodes$')
    assert {'--ntasks=2', '--ntasks-per-node=1'} <= sbatch(script)
    assert re.search(r'^srun --mpi=pmix hpcc$', script, re.MULTILINE)


def test_mpi_stage_copies_then_proves_the_no_copy_path(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^MpiStageCheck$')
    assert {'--ntasks=2', '--ntasks-per-node=1'} <= sbatch(script)
    runs = re.findall(r'^srun --mpi=pmix mpi_stage (.+)$', script,
                      re.MULTILINE)
    assert len(runs) == 2
    assert '--overwrite' in runs[0] and runs[0].endswith('2> first.err')
    assert '--overwrite' not in runs[1] and runs[1].endswith('2> second.err')
    assert all('--source /shared/scratch/' in run and
               '--dest /mnt/nvme/' in run for run in runs)
