"""Tools built by Spack through ReFrame's Spack build system: the build
fixture's script and the check's job script (--dry-run; there is no Spack
here, a stand-in named spack only lets the fixtures see one on PATH), and
the skip, with its reason, where Spack is missing."""
import os
import re

import pytest

from checks.common import job_nodes, node_probe
from tests.support.helpers import (REPO, STANDINS, dry_run_job_scripts,
                                   run_reframe, suite_env)

SPACK_STANDIN = STANDINS / 'nospack'

SPECS = {'IorSpackCheck': 'ior', 'StreamSpackCheck': 'stream +openmp',
         'HplSpackCheck': 'hpl', 'HpcgSpackCheck': 'hpcg'}


@pytest.fixture(scope='module')
def scripts(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('spack')
    env = suite_env(tmp_path / 'home', {
        'PATH': f'{SPACK_STANDIN}{os.pathsep}{os.environ["PATH"]}'})
    return dry_run_job_scripts(tmp_path, 'azure:hbv4', '-t', 'spack',
                               env=env)


@pytest.mark.parametrize('check', sorted(SPECS))
def test_the_job_loads_the_fixture_build_first(scripts, check):
    # (the lines that record the job's nodes and probe them before the
    # test may come before: job_nodes.py, node_probe.py)
    records = (job_nodes.NODES_FILE, node_probe.PROBE_COPY)
    body = [line for line in scripts[check].splitlines()
            if line and not line.startswith(('#', 'export '))
            and not any(name in line for name in records)]
    load = re.fullmatch(r'eval "\$\(spack -e (\S+)/rfm_spack_env load --sh '
                        r'(.+)\)"', body[0])
    assert load, body[0]
    assert load.group(2) == SPECS[check]
    # the fixture that built it is the one whose environment is loaded
    assert os.path.basename(load.group(1)).startswith('Spack')
    assert body[1].startswith('command -v ')


def test_builds_install_their_spec_in_a_spack_environment(tmp_path):
    env = suite_env(tmp_path / 'home', {
        'PATH': f'{SPACK_STANDIN}{os.pathsep}{os.environ["PATH"]}'})
    prefix = tmp_path / 'rfm'
    result = run_reframe('--system', 'azure:hbv4', '-c', 'checks/storage',
                         '-n', 'IorSpackCheck', '--dry-run', '--prefix',
                         str(prefix), env=env, cwd=str(REPO))
    assert result.returncode == 0, result.stdout + result.stderr
    [build] = list(prefix.rglob('rfm_build.sh'))
    commands = [line for line in build.read_text().splitlines()
                if line.startswith('spack ')]
    assert commands == [
        'spack env create -d rfm_spack_env',
        'spack -e rfm_spack_env config add '
        '"config:install_tree:root:opt/spack"',
        'spack -e rfm_spack_env add ior',
        'spack -e rfm_spack_env install',
    ]


def test_osu_spack_variant_uses_host_buffers_only(scripts):
    osu = {name: text for name, text in scripts.items()
           if name.startswith('OsuPointToPointSpack')}
    assert len(osu) == 3
    for text in osu.values():
        assert 'load --sh osu-micro-benchmarks' in text
        assert '-d cuda' not in text


def test_without_spack_the_variants_skip_and_say_why(tmp_path):
    env = suite_env(tmp_path / 'home')
    env['PATH'] = os.pathsep.join(
        p for p in env['PATH'].split(os.pathsep)
        if not os.path.exists(os.path.join(p, 'spack')))
    result = run_reframe('--system', 'local', '-c', 'checks/storage',
                         '-n', 'IorSpackCheck', '-r', '--prefix',
                         str(tmp_path / 'rfm'), env=env, cwd=str(REPO))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'spack is not on PATH' in output
    assert 'skipped due to skipped dependencies' in output
