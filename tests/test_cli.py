"""scripts/clusterproof as a user runs it: parse and ingest."""
import json
import os
import subprocess
import sys

from tests.helpers import DATA, REPO, stored_rows

CLI = str(REPO / 'scripts' / 'clusterproof')


def cli(*args, env=None, stdin=None):
    return subprocess.run([sys.executable, CLI, *args], capture_output=True,
                          text=True, env=env, input=stdin, timeout=120)


def test_parse_prints_the_contract_json():
    result = cli('parse', 'ior',
                 str(DATA / 'ior' / 'v4.1.0+dev_posix_shared_file_i3.out'))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out['tool'] == 'ior' and out['ok'] is True
    assert out['reason'] is None
    assert out['metrics']['write_bandwidth_mib'] == {'value': 295.65,
                                                     'unit': 'MiB/s'}
    assert out['metrics']['read_bandwidth_mib'] == {'value': 9036.82,
                                                    'unit': 'MiB/s'}


def test_parse_reads_stdin_and_reports_failure():
    text = (DATA / 'ior' / 'v4.0.0_fail_unwritable_path.out').read_text()
    result = cli('parse', 'ior', '-', stdin=text)
    assert result.returncode == 1
    out = json.loads(result.stdout)
    assert out['ok'] is False and 'Not a directory' in out['reason']
    assert out['metrics'] == {}


def test_parse_usage_errors_exit_2():
    assert cli('parse', 'nosuchtool', 'x').returncode == 2
    missing = cli('parse', 'ior', '/nonexistent/file')
    assert missing.returncode == 2 and 'cannot read' in missing.stderr
    assert cli().returncode == 2


def test_every_subcommand_explains_itself():
    for command in ('parse', 'ingest', 'sandbox', 'deploy', 'query', 'report'):
        result = cli(command, '--help')
        assert result.returncode == 0, result.stderr
        assert 'usage: clusterproof ' + command in result.stdout


def test_ingest_stores_rows_with_the_partition_sku(tmp_path):
    env = {**os.environ, 'CLUSTERPROOF_HOME': str(tmp_path)}
    good = DATA / 'ior' / 'v4.0.0_blog_posix_w_r_C_e_g_F_s16.out'
    bad = DATA / 'ior' / 'v3.3.0_fail_unwritable_path.out'
    result = cli('ingest', 'ior', str(good), str(bad), '--system', 'azure',
                 '--partition', 'hbv4', '--node', 'hbv4-7', env=env)
    assert result.returncode == 1          # one file failed
    assert 'stored 3 record(s) from 2 file(s) (1 failed)' in result.stdout
    rows = stored_rows(tmp_path)
    assert len(rows) == 3
    assert {row['vm_sku'] for row in rows} == {'Standard_HB176rs_v4'}
    assert {row['check_partition'] for row in rows} == {'hbv4'}
    passed = {row['check_perf_var']: row['check_perf_value']
              for row in rows if row['check_result'] == 'pass'}
    assert passed == {'write_bandwidth_mib': 613.91,
                      'read_bandwidth_mib': 12827.84}
    failed = [row for row in rows if row['check_result'] == 'fail']
    assert len(failed) == 1 and 'Not a directory' in \
        failed[0]['check_fail_reason']
    assert all(row['check_job_nodelist'] == ['hbv4-7'] for row in rows)
