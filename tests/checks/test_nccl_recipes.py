"""NCCL's environment on every ND partition is Azure's recipe for its SKU,
every variable naming the recipe (repository, path, commit) it comes from;
the job script picks the first topology file that exists and records it."""
import json
import re

import pytest

from config.systems.azure_skus import SKUS
from config.systems.nccl_recipes import RECIPES
from tests.support.helpers import REPO, run_reframe, suite_env

ND_FAMILIES = [name for name, sku in SKUS.items()
               if sku['extras'].get('gpus_per_node')]
RECIPE_SOURCE = re.compile(r'^Azure/[\w.-]+ \S+ @ [0-9a-f]{40}\b')


@pytest.fixture(scope='module')
def nd_scripts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('nccl-recipes')
    prefix = tmp / 'rfm'
    result = run_reframe('--system', 'azure', '-c', 'checks/gpu/nccl.py',
                         '-n', 'collective=all_reduce', '--dry-run',
                         '--prefix', str(prefix),
                         env=suite_env(tmp / 'home'), cwd=str(REPO),
                         timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    scripts = {}
    for path in prefix.rglob('rfm_job.sh'):
        partition = path.relative_to(prefix / 'stage' / 'azure').parts[0]
        test = path.parent.name.split('_')[0]
        scripts[(partition, test)] = path.read_text().splitlines()
    return scripts


def test_every_nd_family_has_a_recipe_with_sources():
    assert sorted(RECIPES) == sorted(ND_FAMILIES)
    for family, (every, multinode, topo_files) in RECIPES.items():
        for name, (value, source) in {**every, **multinode}.items():
            assert RECIPE_SOURCE.match(source), (family, name, source)
        assert all(path.startswith('/opt/microsoft/') for path in topo_files)


@pytest.mark.parametrize('family', ND_FAMILIES)
def test_the_job_script_exports_the_recipe(nd_scripts, family):
    every, multinode, topo_files = RECIPES[family]
    single = nd_scripts[(family, 'NcclSingleNode')]
    multi = nd_scripts[(family, 'NcclMultiNode')]
    for name, (value, _) in every.items():
        assert f'export {name}={value}' in single, name
        assert f'export {name}={value}' in multi, name
    for name, (value, _) in multinode.items():
        assert f'export {name}={value}' in multi, name
        assert not any(line.startswith(f'export {name}=') for line in single)
    # the proof of transport stays on whatever the recipe says
    assert 'export NCCL_DEBUG=INFO' in single
    picks = [line for line in single if line.startswith('for f in ')]
    if topo_files:
        assert picks == [f'for f in {" ".join(topo_files)}; do if [ -e "$f" ]'
                         '; then export NCCL_TOPO_FILE="$f"; break; fi; done; '
                         'echo "${NCCL_TOPO_FILE:-}" > '
                         'clusterproof_nccl_topo_file.txt']
    else:
        assert picks == []
    assert not any('NCCL_TOPO_FILE=/' in line for line in single)


def test_hopper_recipe_facts():
    every, multinode, topo_files = RECIPES['ndv5']
    # azhpc-images ndv5.sh: the link first, then the file the image ships
    assert topo_files == ['/opt/microsoft/ndv5/topo.xml',
                          '/opt/microsoft/ndv5-topo.xml']
    assert every['NCCL_IGNORE_CPU_AFFINITY'][0] == '1'
    assert every['NCCL_MIN_NCHANNELS'][0] == '32'
    assert every['NCCL_P2P_NET_CHUNKSIZE'][0] == '2097152'
    assert every['UCX_TLS'][0] == 'tcp'             # MPI bootstrap only
    assert multinode['NCCL_COLLNET_ENABLE'][0] == '1'   # SHARP across VMs
    gb, _, _ = RECIPES['ndgb200v6']
    assert gb['NCCL_MNNVL_ENABLE'][0] == '1'
    assert gb['UCX_NET_DEVICES'][0] == 'mlx5_ib0:1'
    assert 'UCX_TLS' not in gb


def test_no_nccl_variable_reaches_the_partition_environment(tmp_path):
    result = run_reframe('--system', 'azure', '--show-config',
                         'systems/0/partitions',
                         env=suite_env(tmp_path / 'home'), cwd=str(REPO))
    assert result.returncode == 0, result.stderr
    partitions = json.loads(result.stdout[result.stdout.index('['):])
    assert {p['name'] for p in partitions} >= set(ND_FAMILIES)
    for partition in partitions:
        names = [name for name, _ in partition.get('env_vars', [])]
        assert not [n for n in names if n.startswith(('UCX_', 'NCCL_'))]
