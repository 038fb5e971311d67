"""`clusterproof discover` on a CycleCloud Workspace for Slurm login node
(its sinfo replayed from tests/support/data/ccws, shapes from CCWS's own sources):
the site file it writes, the precedence of the configuration, and the
--dry-run job scripts that land on the cluster's real partitions."""
import json
import os
import re
import socket
import subprocess
import sys

import yaml

from config.systems import discovery, site_file
from tests.support.helpers import DATA, REPO, STANDINS, run_reframe, suite_env

CCWS_SINFO = STANDINS / 'ccws'


def ccws_env(tmp_path, extra=None):
    env = suite_env(tmp_path / 'home', extra)
    env['PATH'] = f'{CCWS_SINFO}{os.pathsep}{env["PATH"]}'
    return env


def partitions_of(env):
    """(ReFrame name, Slurm access) of the azure system's partitions."""
    listed = run_reframe('--system', 'azure', '--show-config',
                         'systems/0/partitions', env=env, cwd=str(REPO))
    assert listed.returncode == 0, listed.stdout + listed.stderr
    found = json.loads(listed.stdout[listed.stdout.index('['):])
    return [(p['name'], p['access'][0]) for p in found]


def clusterproof(env, *args):
    return subprocess.run(
        [sys.executable, str(REPO / 'scripts' / 'clusterproof'), *args],
        env=env, cwd=str(REPO), capture_output=True, text=True, timeout=120)


def test_shapes_propose_families_and_say_when_ambiguous():
    text = (DATA / 'ccws' / 'sinfo-N-partitions.txt').read_text()
    found = {p.partition.name: p
             for p in map(discovery.propose, discovery.parse_sinfo(text))}
    assert list(found) == ['hpc', 'htc', 'gpu', 'gb200']
    assert found['hpc'].candidates == ['hbv4']      # not hx: 729 GiB
    assert found['htc'].candidates == []            # F2s_v2: no family
    assert found['gpu'].candidates == ['ndv4', 'ndv5', 'ndh200v5']
    assert found['gb200'].candidates == ['ndgb200v6']  # its VM-size feature
    assert 'node feature Standard_ND128isr_NDR_GB200_v6' in \
        found['gb200'].basis
    hpc = found['hpc'].partition
    assert hpc.states == {'idle': 1, 'idle~': 3}
    assert hpc.nodes == [f'ccw-hpc-{i}' for i in range(1, 5)]


def test_gres_gpu_counts():
    assert discovery.gpu_count('gpu:8') == 8
    assert discovery.gpu_count('gpu:h100:8(S:0-1)') == 8
    assert discovery.gpu_count('(null)') == 0
    assert discovery.gpu_count('gpu:a:2,gpu:b:2,shard:8') == 4


def test_discover_writes_a_site_file_a_dry_run_turns_into_cluster_jobs(
        tmp_path):
    env = ccws_env(tmp_path)
    result = clusterproof(env, 'discover')
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r'^  gpu: ndv4 .*AMBIGUOUS, could be ndv4, ndv5, '
                     r'ndh200v5', result.stdout, re.M)
    assert '; 3 of 4 nodes powered down (`clusterproof acceptance ' \
        '--power-up` starts them)' in result.stdout
    written = tmp_path / 'home' / site_file.FILE_NAME
    data = yaml.safe_load(written.read_text())
    assert data['partitions'] == {
        'hpc': {'family': 'hbv4'}, 'htc': {'family': None},
        'gpu': {'family': 'ndv4', 'candidates': ['ndv4', 'ndv5', 'ndh200v5']},
        'gb200': {'family': 'ndgb200v6'}}
    assert 'AMBIGUOUS' in written.read_text()
    # the user settles the ambiguity in the one file, then dry-runs
    written.write_text(written.read_text().replace('family: ndv4',
                                                   'family: ndv5'))
    prefix = tmp_path / 'rfm'
    result = run_reframe('--system', 'azure', '-c', 'checks/cpu/stream.py',
                         '-c', 'checks/gpu/nccl.py', '-n',
                         '^StreamCheck$|NcclSingleNode', '--dry-run',
                         '--prefix', str(prefix), env=env, cwd=str(REPO))
    assert result.returncode == 0, result.stdout + result.stderr
    partitions = {}
    for script in (p.read_text() for p in prefix.rglob('rfm_job.sh')):
        slurm = re.search(r'^#SBATCH --partition=(\S+)', script, re.M)
        partitions.setdefault(slurm.group(1), 0)
        partitions[slurm.group(1)] += 1
    # STREAM on each partition; nccl-tests (5 collectives) on the GPU ones
    assert partitions == {'hpc': 1, 'gpu': 6, 'gb200': 6}
    assert partitions_of(env) == [('hbv4', '--partition=hpc'),
                                  ('ndv5', '--partition=gpu'),
                                  ('ndgb200v6', '--partition=gb200')]


def test_the_vm_size_jobs_reported_settles_the_ambiguity(tmp_path):
    day = tmp_path / 'home' / 'results' / '2026-12-01'
    day.mkdir(parents=True)
    rows = [{'check_job_nodelist': ['ccw-gpu-1'],
             'vm_sku_observed': 'Standard_ND96isr_H200_v5'},
            {'check_job_nodelist': ['ccw-gpu-1', 'ccw-gpu-2'],
             'vm_sku_observed': 'Standard_ND96isr_H100_v5'}]  # not per node
    (day / 'earlier.jsonl').write_text(
        ''.join(json.dumps(row) + '\n' for row in rows))
    result = clusterproof(ccws_env(tmp_path), 'discover')
    assert result.returncode == 0, result.stdout + result.stderr
    data = yaml.safe_load((tmp_path / 'home' / site_file.FILE_NAME)
                          .read_text())
    assert data['partitions']['gpu'] == {'family': 'ndh200v5'}
    assert ('settled by the VM size its nodes reported '
            '(Standard_ND96isr_H200_v5, vm_sku_observed)') in result.stdout


def test_the_environment_wins_over_the_site_file(tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    (home / site_file.FILE_NAME).write_text(
        'partitions:\n  hpc: {family: hbv4}\n')
    env = suite_env(home, {'CLUSTERPROOF_AZURE_PARTITIONS': 'hx=bigmem'})
    assert partitions_of(env) == [('hx', '--partition=bigmem')]


def test_two_partitions_of_one_family_and_a_bad_file(tmp_path):
    entries = site_file.entries_from({'partitions': {
        'gpu': {'family': 'ndv5'}, 'gpu2': {'family': 'ndv5'},
        'htc': {'family': None}}})
    assert entries == [('ndv5-gpu', 'ndv5', 'gpu'),
                       ('ndv5-gpu2', 'ndv5', 'gpu2')]
    bad = tmp_path / site_file.FILE_NAME
    bad.write_text('partitions:\n  hpc: {family: hbv9}\n')
    try:
        site_file.load(bad)
    except site_file.SiteFileError as error:
        assert "unknown family 'hbv9'" in str(error)
    else:
        raise AssertionError('an unknown family must be refused')
    assert site_file.load(tmp_path / 'absent.yaml') is None


def test_nothing_configured_on_a_cluster_host_discovers_in_memory(tmp_path):
    env = ccws_env(tmp_path, {'CLUSTERPROOF_AZURE_HOSTNAMES':
                              '^' + re.escape(socket.gethostname()) + '$'})
    assert partitions_of(env) == [('hbv4', '--partition=hpc'),
                                  ('ndv4', '--partition=gpu'),
                                  ('ndgb200v6', '--partition=gb200')]
    assert not (tmp_path / 'home' / site_file.FILE_NAME).exists()


def test_without_slurm_discover_says_so(tmp_path):
    env = suite_env(tmp_path / 'home', {'PATH': '/nonexistent'})
    result = clusterproof(env, 'discover')
    assert result.returncode == 1
    assert 'sinfo not found' in result.stderr
    assert not (tmp_path / 'home' / site_file.FILE_NAME).exists()


def test_print_and_out(tmp_path):
    env = ccws_env(tmp_path)
    printed = clusterproof(env, 'discover', '--print')
    assert printed.returncode == 0, printed.stderr
    assert yaml.safe_load(printed.stdout)['partitions']['hpc'] == \
        {'family': 'hbv4'}
    assert not (tmp_path / 'home' / site_file.FILE_NAME).exists()
    shared = tmp_path / 'var-lib-clusterproof' / site_file.FILE_NAME
    written = clusterproof(env, 'discover', '--out', str(shared))
    assert written.returncode == 0, written.stderr
    assert f'wrote {shared}' in written.stdout
    assert site_file.load(shared) == [('hbv4', 'hbv4', 'hpc'),
                                      ('ndv4', 'ndv4', 'gpu'),
                                      ('ndgb200v6', 'ndgb200v6', 'gb200')]


def test_the_sinfo_stand_in_refuses_other_command_lines():
    sinfo = CCWS_SINFO / 'sinfo'
    other = subprocess.run([str(sinfo), '-N'], capture_output=True,
                           text=True, timeout=30)
    assert other.returncode != 0 and 'unexpected arguments' in other.stderr
    right = subprocess.run([str(sinfo), *discovery.SINFO_ARGV[1:]],
                           capture_output=True, text=True, timeout=30)
    assert right.returncode == 0
    assert right.stdout == (DATA / 'ccws' / 'sinfo-N-partitions.txt') \
        .read_text()
