"""The Slurm sandbox for real: four slurmd nodes, MPI across them with PMIx,
accounting through slurmdbd, idempotent start/stop; plus the messages and
the agreement between the sandbox, its ReFrame system and scripts/setup.sh."""
import argparse
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from config.systems import sandbox as sandbox_system
from scripts.cli import sandbox
from tests.support import helpers
from tests.support.sandbox_runs import restart_dead_daemons

REPO = helpers.REPO

MPI_HELLO = r'''
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s sum %d\n", rank, size, getenv("SLURMD_NODENAME"), sum);
    MPI_Finalize();
    return 0;
}
'''


def slurm(*argv, env=None, timeout=120):
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    assert result.returncode == 0, f'{argv}: {result.stdout}{result.stderr}'
    return result.stdout


def wait_until(condition, timeout=60):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def sacct_rows(job_id):
    out = slurm('sacct', '-n', '-P', '-j', job_id, '-o', 'jobid,state,exitcode,nodelist,partition')
    return {row.split('|')[0]: row.split('|')[1:] for row in out.splitlines()}


def test_all_nodes_idle_in_both_partitions(slurm_sandbox):
    assert wait_until(lambda: sandbox.node_states(slurm_sandbox.dir)
                      == {node: 'idle' for node in sandbox.NODES})
    out = slurm('sinfo', '-h', '-o', '%P %D %t %N')
    count = len(sandbox.NODES)
    assert out.split('\n')[:2] == [f'hbv4* {count} idle sb-n[1-{count}]',
                                   f'ndv5 {count} idle sb-n[1-{count}]']


def test_srun_spans_the_two_nodes(slurm_sandbox):
    out = slurm('srun', '-N2', '-n2', '--ntasks-per-node=1', 'printenv', 'SLURMD_NODENAME')
    assert sorted(out.split()) == ['sb-n1', 'sb-n2']


def test_mpi_job_over_pmix_on_two_nodes_is_accounted(slurm_sandbox, tmp_path):
    (tmp_path / 'hello.c').write_text(MPI_HELLO)
    slurm('mpicc', '-o', str(tmp_path / 'hello'), str(tmp_path / 'hello.c'))
    script = tmp_path / 'job.sh'
    # Direct launch through Slurm's PMIx plugin, then mpirun (started as root in the job).
    script.write_text(f'#!/bin/sh\nsrun --mpi=pmix {tmp_path / "hello"}\n'
                      f'mpirun {tmp_path / "hello"}\n')
    # No Open MPI variables from here: mpirun refuses root unless the sandbox's task
    # prolog sets them in the job.
    env = {k: v for k, v in os.environ.items() if not k.startswith('OMPI_')}
    job_id = slurm('sbatch', '--parsable', '-N2', '-n2', '-p', 'ndv5',
                   '-o', str(tmp_path / 'job.out'), str(script), env=env).strip()
    # Polled rather than `sbatch --wait` (which backs off to several seconds per poll);
    # slurmctld also reports to slurmdbd asynchronously, so this waits for the final record.
    expected = ['COMPLETED', '0:0', 'sb-n[1-2]', 'ndv5']
    failed = ('FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY')
    wait_until(lambda: sacct_rows(job_id).get(job_id, [''])[0].startswith(failed)
               or sacct_rows(job_id).get(job_id) == expected, timeout=120)
    assert sacct_rows(job_id).get(job_id) == expected, (tmp_path / 'job.out').read_text()
    assert sacct_rows(job_id)[f'{job_id}.0'][:3] == ['COMPLETED', '0:0', 'sb-n[1-2]']
    lines = sorted((tmp_path / 'job.out').read_text().splitlines())
    assert lines == ['rank 0 of 2 on sb-n1 sum 1'] * 2 + ['rank 1 of 2 on sb-n2 sum 1'] * 2


def test_a_daemon_that_died_is_started_again_before_the_next_test(
        slurm_sandbox):
    """A slurmd killed as a segfault would kill it: the next sandbox test's setup
    finds the sandbox whole again, every node idle (conftest.py)."""
    pid = sandbox.slurmd_pid(slurm_sandbox.dir, 'sb-n5')
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while sandbox.slurmd_pid(slurm_sandbox.dir, 'sb-n5'):
        assert time.monotonic() < deadline, 'slurmd of sb-n5 outlived SIGKILL'
        time.sleep(0.2)
    assert restart_dead_daemons(slurm_sandbox.dir) == ['slurmd-sb-n5']
    assert sorted(sandbox.running_daemons(slurm_sandbox.dir)) == \
        sorted(sandbox.DAEMONS)
    states = sandbox.node_states(slurm_sandbox.dir)
    assert [states.get(node) for node in sandbox.NODES] == ['idle'] * 5
    assert restart_dead_daemons(slurm_sandbox.dir) == []


def test_start_again_says_already_running(slurm_sandbox, capsys, tmp_path):
    before = sandbox.running_daemons(slurm_sandbox.dir)
    assert sorted(before) == sorted(sandbox.DAEMONS)
    args = argparse.Namespace(action='start', dir=slurm_sandbox.dir)
    assert sandbox.run(args) == 0
    out = capsys.readouterr().out
    assert f'sandbox already running in {slurm_sandbox.dir}' in out
    assert sandbox.running_daemons(slurm_sandbox.dir) == before
    # The printed next steps, pasted into a shell elsewhere (listing instead
    # of running the whole suite), work as printed.
    lines = [line.strip() for line in out.splitlines()]
    steps = lines[lines.index('use it with:') + 1:lines.index('use it with:') + 3]
    assert steps[0] == f'source {slurm_sandbox.dir}/env'
    assert steps[1].endswith(' --system sandbox -c ' + str(REPO / 'checks') + ' -r') or \
        steps[1] == '.venv/bin/reframe -C config/config.py --system sandbox -c checks -r'
    listing = subprocess.run(
        ['bash', '-c', f'{steps[0]} && cd {REPO} && {steps[1][:-2]} -l'],
        capture_output=True, text=True, timeout=300,
        env={**{k: v for k, v in os.environ.items() if not k.startswith('RFM_')},
             'CLUSTERPROOF_HOME': str(tmp_path)})
    assert listing.returncode == 0, listing.stdout + listing.stderr
    assert 'HpccTwoNodes' in listing.stdout
    assert lines[lines.index('stop it with:') + 1].endswith(
        f'sandbox stop --dir {slurm_sandbox.dir}')


def test_status_lists_daemons_and_nodes(slurm_sandbox, capsys):
    assert sandbox.run(argparse.Namespace(action='status', dir=slurm_sandbox.dir)) == 0
    out = capsys.readouterr().out
    assert re.search(r'slurmctld +running, pid \d+', out)
    assert re.search(r'node sb-n2 +\w+', out)


def test_env_file_points_clients_at_the_sandbox(slurm_sandbox):
    text = (slurm_sandbox.dir / 'env').read_text()
    assert f'export SLURM_CONF={slurm_sandbox.dir}/slurm.conf\n' in text
    assert 'export OMPI_ALLOW_RUN_AS_ROOT=1\n' in text
    assert slurm_sandbox.env['SLURM_CONF'] == str(slurm_sandbox.dir / 'slurm.conf')


def test_stop_and_start_from_scratch_in_another_dir(slurm_sandbox, tmp_path_factory):
    # A second sandbox next to the session's one: its own ports, key and database.
    directory = tmp_path_factory.mktemp('second')
    say = lambda _: None
    assert sandbox.start(directory, say=say) is True
    pids = sandbox.running_daemons(directory).values()
    assert len(pids) == len(sandbox.DAEMONS)
    assert sandbox.stop(directory, say=say) is True
    assert all(not Path(f'/proc/{pid}').exists() or
               Path(f'/proc/{pid}/stat').read_text().split()[2] == 'Z' for pid in pids)
    assert sandbox.running_daemons(directory) == {}
    assert not directory.exists()                         # stop removes its state
    assert sandbox.stop(directory, say=say) is False      # already stopped
    assert sandbox.start(directory, say=say) is True      # from scratch again
    assert sandbox.stop(directory, say=say, keep=True) is True
    assert (directory / 'log' / 'slurmctld.log').is_file()
    assert sandbox.start(directory, say=say) is True      # again, on the kept database
    (directory / 'mine.txt').write_text('not the sandbox\'s')
    sandbox.stop(directory, say=say)
    assert [p.name for p in directory.iterdir()] == ['mine.txt']
    # the session's sandbox was left alone
    assert len(sandbox.running_daemons(slurm_sandbox.dir)) == len(sandbox.DAEMONS)


def test_prerequisite_messages():
    assert sandbox.prerequisite_problem(True, []) is None
    not_root = sandbox.prerequisite_problem(False, [])
    assert 'must run as root' in not_root
    missing = sandbox.prerequisite_problem(True, ['hpcc', 'slurmdbd'])
    assert 'apt-get install -y hpcc slurmdbd' in missing
    assert 'root' not in missing
    both = sandbox.prerequisite_problem(False, ['munge'])
    assert 'must run as root' in both and 'apt-get install -y munge' in both


def test_missing_packages_named_when_nothing_is_installed(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, 'SEARCH_PATH', str(tmp_path))
    monkeypatch.setattr(sandbox, 'REQUIRED_FILES',
                        {str(tmp_path / 'mpi_pmix.so'): 'slurm-wlm-basic-plugins'})
    assert sandbox.missing_packages() == [
        'libopenmpi-dev', 'mariadb-server', 'munge', 'openmpi-bin', 'slurm-client',
        'slurm-wlm-basic-plugins', 'slurmctld', 'slurmd', 'slurmdbd', 'util-linux']


def test_cli_refuses_without_root(monkeypatch, capsys):
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    assert sandbox.run(argparse.Namespace(action='stop', dir=Path('/nonexistent'))) == 2
    assert 'must run as root' in capsys.readouterr().err


def test_start_failure_names_the_log(tmp_path):
    log = tmp_path / 'slurmctld.log'
    with pytest.raises(sandbox.SandboxError, match=f'slurmctld not ready after 0.2 s; see {log}'):
        sandbox._wait_for('slurmctld', lambda: False, [log], timeout=0.2)


def test_setup_script_installs_every_package_the_sandbox_needs():
    text = (REPO / 'scripts' / 'setup.sh').read_text()
    listed = set(re.search(r'TEST_PACKAGES=\(([^)]*)\)', text).group(1).split())
    needed = set(sandbox.REQUIRED_COMMANDS.values()) | set(sandbox.REQUIRED_FILES.values())
    # util-linux is essential in Debian (always there)
    assert needed - {'util-linux'} <= listed
    assert {'hpcc', 'openssl'} <= listed


def test_reframe_system_mirrors_the_sandbox():
    system = sandbox_system.system
    assert system['name'] == 'sandbox'
    assert not any(re.search(p, 'vm') or re.search(p, 'localhost') for p in system['hostnames'])
    partitions = {p['name']: p for p in system['partitions']}
    assert list(partitions) == ['hbv4', 'hbv4-squeue', 'ndv5']
    assert {p['access'][0] for p in partitions.values()} == \
        {f'--partition={name}' for name in sandbox.PARTITIONS}
    assert [partitions[n]['scheduler'] for n in partitions] == ['slurm', 'squeue', 'slurm']
    for part in partitions.values():
        assert dict(part['env_vars']) == sandbox.JOB_ENV
        assert part['extras']['cores_per_node'] == sandbox.CORES_PER_NODE
    assert partitions['hbv4']['extras']['vm_sku'] == 'Standard_HB176rs_v4'
    assert partitions['ndv5']['extras']['vm_sku'] == 'Standard_ND96isr_H100_v5'
