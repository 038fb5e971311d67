"""The ior check through real ReFrame on the real sandbox Slurm
(the ior binary is a replay stand-in: it cannot be built here), with both
the accounting (sacct) and squeue schedulers, and records reaching the local
store and a loopback Logs Ingestion endpoint."""
import os

import pytest

import subprocess
import time

from checks.storage.ior import (FILE_SYSTEM_FILE, file_system_command,
                                file_system_of)
from config.results.rows import schema as row_schema
from tests.support.helpers import (REPO, STANDINS, benchmark_rows, run_reframe,
                                   stored_rows)


def accounted_nodes(jobid: str, env: dict) -> list[str]:
    """The job's nodes in Slurm accounting, once slurmdbd has both."""
    deadline = time.monotonic() + 30
    while True:
        nodes = subprocess.run(
            ['sacct', '-X', '-n', '-j', jobid, '-o', 'NodeList%40'],
            env=env, capture_output=True, text=True).stdout.strip()
        names = subprocess.run(
            ['scontrol', 'show', 'hostnames', nodes], env=env,
            capture_output=True, text=True).stdout.split() if nodes else []
        if len(names) == 2 or time.monotonic() > deadline:
            return names
        time.sleep(1)


@pytest.mark.parametrize('partition', ['hbv4', 'hbv4-squeue'])
def test_ior_on_sandbox_slurm(partition, slurm_sandbox, fake_azure,
                              tmp_path):
    env = {**os.environ, **slurm_sandbox.env, **fake_azure.env(),
           'CLUSTERPROOF_HOME': str(tmp_path / 'home'),
           'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}'}
    env.pop('RFM_SYSTEM', None)
    result = run_reframe('--system', f'sandbox:{partition}',
                         '-c', 'checks/storage/ior.py', '-n', '^IorCheck$',
                         '-S', 'num_nodes=2', '-S', 'size_profile=full',
                         '-r',
                         '--prefix', str(tmp_path / 'rfm'),
                         env=env, cwd=str(REPO))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    stored = stored_rows(tmp_path / 'home')
    rows = benchmark_rows(stored)
    shared = os.path.join(slurm_sandbox.env['CLUSTERPROOF_SANDBOX_DIR'],
                          'shared')
    subprocess.run(['bash', '-c', file_system_command(shared)],
                   cwd=tmp_path, check=True, timeout=30)
    file_system = file_system_of((tmp_path / FILE_SYSTEM_FILE).read_text())
    assert file_system
    assert {row['check_perf_var']: row['check_perf_value'] for row in rows} \
        == {'write_bandwidth_mib': 613.91, 'read_bandwidth_mib': 12827.84}
    for row in rows:
        assert row['check_system'] == 'sandbox'
        assert row['check_partition'] == partition
        assert row['vm_sku'] == 'Standard_HB176rs_v4'
        assert row['check_jobid'].isdigit()      # a real Slurm job id
        # two nodes, as many tasks as cores (2) up to 8 per node; -C makes
        # each node read what the other wrote, past its page cache
        assert row['check_num_tasks'] == 4
        params = row['check_params']
        assert params['page_cache_defeat'].startswith('reads of another node')
        # 1.5 x the partition's 1 GiB per node, 2 MiB blocks, 2 tasks
        assert params['segments'] == 384
        assert params['stonewall_seconds'] == 300
        assert params['size_profile'] == 'full'
        # what each phase really moved, from the replayed summary (64 MiB:
        # the recording's size, not the 1.5 GiB asked for)
        assert params['data_moved_mib'] == {'write': 64.0, 'read': 64.01}
        assert row['reference_key'].split('|')[3] == '2n'
        # the file system the job wrote on, as findmnt says here (the
        # sandbox's nodes are this host): part of the key
        assert params['file_system'] == file_system
        assert f'file_system={file_system}' in row['reference_key']
    if partition == 'hbv4':
        # The job records its nodes (ReFrame's first sacct poll may hold
        # only the first one): the rows name both, as accounting does.
        assert accounted_nodes(rows[0]['check_jobid'], env) \
            == rows[0]['check_job_nodelist']
        assert len(rows[0]['check_job_nodelist']) == 2
    shipped = {row['record_id'] for row in fake_azure.rows}
    assert shipped == {row['record_id'] for row in stored}
    assert all(set(row) == set(row_schema.column_names())
               for row in fake_azure.rows)
