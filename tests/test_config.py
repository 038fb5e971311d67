"""The configuration: every system and partition lists the checks without
error, and --dry-run job scripts for the Azure partitions carry the right
scheduler and launcher lines."""
import os
from pathlib import Path

import pytest

from config import config as site
from tests.helpers import REPO, run_reframe

PARTITIONS = [f"{system['name']}:{part['name']}"
              for system in site.site_configuration['systems']
              for part in system['partitions']]


def env_for(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('RFM_', 'DATA_COLLECTION', 'LOGS_DCR'))}
    env['CLUSTERPROOF_HOME'] = str(tmp_path / 'home')
    return env


def test_every_family_is_declared():
    names = {system['name'] for system in site.site_configuration['systems']}
    assert {'local', 'sandbox', 'azure', 'azure-squeue',
            'pbs-example'} <= names
    # local matches any host, so it must come last
    assert site.site_configuration['systems'][-1]['name'] == 'local'


def test_azure_partitions_name_their_sku():
    azure = next(s for s in site.site_configuration['systems']
                 if s['name'] == 'azure')
    parts = {p['name']: p for p in azure['partitions']}
    assert set(parts) == {'hbv3', 'hbv4', 'hbv5', 'hx', 'ndv4', 'ndv5',
                          'ndh200v5', 'ndgb200v6', 'ndgb300v6'}
    for part in parts.values():
        assert part['scheduler'] == 'slurm' and part['launcher'] == 'srun'
        assert part['extras']['vm_sku'].startswith('Standard_')
        assert '--exclusive' in part['access']
        assert part['extras']['launcher_options'] == ['--mpi=pmix']
    ndv5 = parts['ndv5']
    assert ndv5['devices'] == [{'type': 'gpu', 'arch': 'sm_90',
                                'num_devices': 8}]
    assert ndv5['resources'] == [{'name': '_rfm_gpu', 'options': ['--gres=gpu:{num_gpus_per_node}']}]
    squeue = next(s for s in site.site_configuration['systems']
                  if s['name'] == 'azure-squeue')
    assert {p['scheduler'] for p in squeue['partitions']} == {'squeue'}


@pytest.mark.parametrize('target', PARTITIONS)
def test_list_works_on_every_partition(target, tmp_path):
    result = run_reframe('--system', target, '-c', 'checks', '-l',
                         env=env_for(tmp_path), cwd=str(REPO), timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'skipping test file' not in output, output
    assert 'Found' in output and 'IorCheck' in output


def dry_run_scripts(tmp_path, target, *names):
    selection = [arg for name in names for arg in ('-n', name)]
    result = run_reframe('--system', target, '-c', 'checks', *selection,
                         '--dry-run', '--prefix', str(tmp_path / 'rfm'),
                         env=env_for(tmp_path), cwd=str(REPO), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return {path.parent.name: path.read_text()
            for path in Path(tmp_path / 'rfm').rglob('rfm_job.sh')}


@pytest.mark.parametrize('partition', ['hbv4', 'hbv5'])
def test_ior_dry_run_job_script(partition, tmp_path):
    scripts = dry_run_scripts(tmp_path, f'azure:{partition}', '^IorCheck$')
    script = scripts['IorCheck']
    assert f'#SBATCH --partition={partition}' in script
    assert '#SBATCH --exclusive' in script
    assert '#SBATCH --ntasks=1' in script
    assert 'command -v ior' in script        # early, explained failure
    assert 'srun --mpi=pmix ior -a POSIX -w -r -C -e -g -b 2M -t 2M -s 16 -F' \
        in script
    assert '-o /shared/scratch/clusterproof-ior-' in script


def test_partitions_can_be_mapped_to_site_slurm_names(tmp_path):
    env = env_for(tmp_path)
    env['CLUSTERPROOF_AZURE_PARTITIONS'] = 'hbv4=hpc'
    result = run_reframe('--system', 'azure', '-c', 'checks/storage', '-n',
                         '^IorCheck$', '--dry-run', '--prefix',
                         str(tmp_path / 'rfm'), env=env, cwd=str(REPO),
                         timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    scripts = list(Path(tmp_path / 'rfm').rglob('rfm_job.sh'))
    assert len(scripts) == 1
    assert '#SBATCH --partition=hpc' in scripts[0].read_text()
