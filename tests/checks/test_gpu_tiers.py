"""Issue 39, item 7: each GPU tier's per-node time is the sum of its checks'
declared job limits (checks/gpu/tiers.py), read from the job scripts of a
real ReFrame dry run."""
import pytest

from checks.gpu import tiers
from tests.support.helpers import REPO


@pytest.mark.parametrize('text, seconds', [
    ('0:20:0', 1200),      # what ReFrame writes for 20 minutes
    ('1:05:00', 3900),
    ('40', 2400),          # sbatch reads a bare number as minutes
    ('10:30', 630),        # minutes:seconds (sbatch and PBS alike)
    ('2h', None), ('', None), ('1:2:3:4', None)])
def test_clock_seconds(text, seconds):
    assert tiers.clock_seconds(text) == seconds


def test_limit_and_nodes_from_a_job_script():
    script = ('#!/bin/bash\n#SBATCH --ntasks=16\n#SBATCH --ntasks-per-node=8\n'
              '#SBATCH --time=0:20:0\n')
    assert tiers.job_limit_seconds(script) == 1200
    assert tiers.job_nodes(script) == 2
    assert tiers.job_nodes('#SBATCH --nodes=3\n#SBATCH --ntasks=3\n') == 3
    assert tiers.job_nodes('#!/bin/bash\n') == 1
    assert tiers.job_limit_seconds('#PBS -l walltime=0:11:00\n') == 660
    assert tiers.job_limit_seconds('#PBS -l walltime=660\n') == 660
    assert tiers.job_limit_seconds('#!/bin/bash\n') is None


def test_only_one_node_jobs_count():
    jobs = [tiers.Job('a', 1, 600), tiers.Job('b', 1, 900),
            tiers.Job('across', 2, 1200), tiers.Job('unlimited', 1, None)]
    assert tiers.node_seconds(jobs) == 1500
    assert tiers.clock_text(1500) == '25 min'
    assert tiers.clock_text(14400) == '4 h 00 min'


def test_quick_tier_on_nd_h100_is_the_sum_of_its_limits():
    jobs = {job.name: job for job in
            tiers.dry_run_jobs('azure:ndv5', 'daily', REPO)}
    # copy bandwidth: 120 s declared x 3 + 300 s margin = 11 min; compute:
    # (60 s of load + 60 s) x 3 + 300 s = 11 min; the GPU node checks fix
    # their own limits (gpu_node.py: 10m, 10m, DCGM level 2 15m)
    assert {name: job.limit_s for name, job in jobs.items()} == {
        'GpuCopyBandwidth': 660, 'GpuComputeQuick': 660,
        'GpuInventory': 600, 'GpuNvlink': 600, 'GpuDiagDaily': 900}
    assert {job.nodes for job in jobs.values()} == {1}
    assert tiers.node_seconds(list(jobs.values())) == 57 * 60
    text = tiers.report('azure:ndv5', {'quick': list(jobs.values())})
    assert text.splitlines()[0] == ('quick tier (-t daily) on azure:ndv5: '
                                    '57 min per node, the sum of 5 one-node '
                                    'job limits')
