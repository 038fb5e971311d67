"""The configuration: every system and partition lists the checks without
error, and --dry-run job scripts for the Azure partitions carry the right
scheduler and launcher lines."""
import pytest

from config import config as site
from tests.support.helpers import (REPO, dry_run_job_scripts, only_job_script,
                                   run_reframe, suite_env)


def _listed(system):
    """Every partition of the system, but one constrained-core size for
    all of its family's (each is its full size's partition with fewer
    cores: listing the checks of all seven HBv5 ones took ~2 min)."""
    seen = set()
    for part in system['partitions']:
        full_size = part.get('extras', {}).get('full_size')
        if full_size and full_size in seen:
            continue
        seen.add(full_size)
        yield part['name']


PARTITIONS = [f"{system['name']}:{name}"
              for system in site.site_configuration['systems']
              for name in _listed(system)]


def env_for(tmp_path):
    return suite_env(tmp_path / 'home')


@pytest.mark.parametrize('target', PARTITIONS)
def test_list_works_on_every_partition(target, tmp_path):
    result = run_reframe('--system', target, '-c', 'checks', '-l',
                         env=env_for(tmp_path), cwd=str(REPO), timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'skipping test file' not in output, output
    assert 'Found' in output and 'IorCheck' in output


@pytest.mark.parametrize('partition', ['hbv4', 'hbv5'])
def test_ior_dry_run_job_script(partition, tmp_path):
    script = only_job_script(tmp_path, f'azure:{partition}', '^IorCheck$')
    assert f'#SBATCH --partition={partition}' in script
    assert '#SBATCH --exclusive' in script
    assert '#SBATCH --ntasks=16' in script     # 2 nodes x 8 tasks
    assert 'command -v ior' in script        # early, explained failure
    assert ('srun --mpi=pmix ior -a POSIX -w -r -C -e -g '
            '-b 2M -t 2M -s ') in script
    assert '-o /shared/scratch/clusterproof-ior-' in script


def test_partitions_can_be_mapped_to_site_slurm_names(tmp_path):
    env = suite_env(tmp_path / 'home',
                    {'CLUSTERPROOF_AZURE_PARTITIONS': 'hbv4=hpc'})
    scripts = dry_run_job_scripts(tmp_path, 'azure', '-n', '^IorCheck$',
                                  env=env)
    assert list(scripts) == ['IorCheck']
    assert '#SBATCH --partition=hpc' in scripts['IorCheck']
