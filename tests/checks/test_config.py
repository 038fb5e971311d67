"""The configuration: every system and partition lists the checks without
error, and --dry-run job scripts for the Azure partitions carry the right
scheduler and launcher lines."""
import re

import pytest

from config import config as site
from tests.support.helpers import (REPO, dry_run_job_scripts, only_job_script,
                                   run_reframe, suite_env)


SYSTEMS = [system['name'] for system in site.site_configuration['systems']]
PARTITIONS = [f"{system['name']}:{part['name']}"
              for system in site.site_configuration['systems']
              for part in system['partitions']]


def env_for(tmp_path):
    return suite_env(tmp_path / 'home')


@pytest.fixture(scope='module')
def concretized(tmp_path_factory):
    """The test cases ReFrame concretizes on every partition of a system
    (`--list=C`), one ReFrame run per system: a run per partition cost a
    second of CPU each, so only one constrained-core HBv5 size was listed."""
    listings = {}

    def listing(system):
        if system not in listings:
            tmp = tmp_path_factory.mktemp(f'list-{system}')
            env = suite_env(tmp / 'home', {'HOME': str(tmp),
                                           'TMPDIR': str(tmp)})
            result = run_reframe('--system', system, '-c', 'checks',
                                 '--list=C', env=env, cwd=str(REPO),
                                 timeout=120)
            listings[system] = (result.returncode,
                                result.stdout + result.stderr)
        return listings[system]
    return listing


@pytest.mark.parametrize('target', PARTITIONS)
def test_list_works_on_every_partition(target, concretized):
    returncode, output = concretized(target.split(':')[0])
    assert returncode == 0, output
    assert 'skipping test file' not in output, output
    assert re.search(r'^Concretized [1-9]\d* test case\(s\)$', output,
                     re.MULTILINE), output
    # the partition's own test cases, IOR among them
    assert re.search(rf'^- IorCheck /\w+ @{re.escape(target)}\+', output,
                     re.MULTILINE), output


def test_every_system_is_listed():
    assert sorted({target.split(':')[0] for target in PARTITIONS}) == \
        sorted(SYSTEMS)


@pytest.mark.parametrize('partition', ['hbv4', 'hbv5'])
def test_ior_dry_run_job_script(partition, tmp_path):
    script = only_job_script(tmp_path, f'azure:{partition}', '^IorCheck$',
                             checks='checks/storage/ior.py')
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
                                  env=env,
                                  checks='checks/storage/ior.py')
    assert list(scripts) == ['IorCheck']
    assert '#SBATCH --partition=hpc' in scripts['IorCheck']
