"""scripts/clusterproof as a user runs it: parse and ingest."""
import json
import os

from tests.support.cli_runs import cli
from tests.support.helpers import DATA, stored_rows


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
    assert 'stored 3 record(s) from 2 file(s) (1 failed, 0 already stored)' \
        in result.stdout
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


def _ingest_env(home):
    return {**os.environ, 'CLUSTERPROOF_HOME': str(home)}


STREAM_OUT = DATA / 'stream' / 'stream_c_omp2_20M.out'


def test_ingest_twice_adds_nothing(tmp_path):
    env = _ingest_env(tmp_path)
    args = ('ingest', 'stream', str(STREAM_OUT), '--system', 'azure',
            '--partition', 'hbv4', '--node', 'n1')
    first = cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    rows = stored_rows(tmp_path)
    assert len(rows) == 4
    again = cli(*args, env=env)
    assert again.returncode == 0, again.stderr
    assert 'stored 0 record(s) from 1 file(s) (0 failed, 4 already stored)' \
        in again.stdout
    assert stored_rows(tmp_path) == rows
    # Another node is another measurement: new ids.
    other = cli(*args[:-1], 'n2', env=env)
    assert 'stored 4 record(s)' in other.stdout
    ids = [row['record_id'] for row in stored_rows(tmp_path)]
    assert len(ids) == len(set(ids)) == 8


def test_ingest_stores_nothing_when_one_file_is_missing(tmp_path):
    result = cli('ingest', 'stream', str(STREAM_OUT), str(tmp_path / 'nope'),
                 '--system', 'azure', '--partition', 'hbv4',
                 env=_ingest_env(tmp_path))
    assert result.returncode == 2
    assert f'cannot read {tmp_path / "nope"}: No such file' in result.stderr
    assert 'nothing stored' in result.stderr
    assert stored_rows(tmp_path) == []


def test_ingest_refuses_unknown_system_and_partition(tmp_path):
    env = _ingest_env(tmp_path)
    system = cli('ingest', 'stream', str(STREAM_OUT), '--system', 'nosuch',
                 '--partition', 'hbv4', env=env)
    assert system.returncode == 2
    assert "unknown system 'nosuch'; known: " in system.stderr
    assert 'azure' in system.stderr and 'Traceback' not in system.stderr
    part = cli('ingest', 'stream', str(STREAM_OUT), '--system', 'azure',
               '--partition', 'hbv9', env=env)
    assert part.returncode == 2
    assert "unknown partition 'hbv9' of system 'azure'" in part.stderr
    assert 'hbv4' in part.stderr
    assert stored_rows(tmp_path) == []


def test_ingest_judges_only_with_a_known_method(tmp_path):
    env = _ingest_env(tmp_path)
    # STREAM on two threads of a small VM, stored as HBv4: far below the
    # HBv4 floor (665500 MB/s) of the StreamCheck reference.
    judged = cli('ingest', 'stream', str(STREAM_OUT), '--system', 'azure',
                 '--partition', 'hbv4', '--reference-key', 'azhc', env=env)
    assert judged.returncode == 0, judged.stderr
    rows = {row['check_perf_var']: row for row in stored_rows(tmp_path)}
    triad = rows['triad_bw']
    assert triad['check_perf_result'] == 'fail'
    assert triad['check_perf_ref'] == 665500
    assert triad['check_perf_lower_thres'] == 0.0
    assert 'azurehpc-health-checks' in triad['reference_source']
    # Same file, method unknown: shown without a verdict or a reference.
    home = tmp_path / 'unknown'
    plain = cli('ingest', 'stream', str(STREAM_OUT), '--system', 'azure',
                '--partition', 'hbv4', env=_ingest_env(home))
    assert plain.returncode == 0, plain.stderr
    results = {row['check_perf_result'] for row in stored_rows(home)}
    assert results == {'informational'}
    assert {row['check_perf_ref'] for row in stored_rows(home)} == {None}


def test_ingest_judges_through_the_one_judge_with_the_reference_bounds():
    from checks.common.references import Reference
    from scripts.cli.ingest import verdict

    def result(value, unit, ref):
        return verdict(value, unit, ref, ['n1'])['check_perf_result']
    floor = Reference(100.0, 0.0, None, 'MB/s', 's')
    assert result(100.0, 'MB/s', floor) == 'pass'
    assert result(99.9, 'MB/s', floor) == 'fail'
    band = Reference(10.0, -0.1, 0.1, 'us', 's')
    assert result(11.5, 'us', band) == 'fail'
    assert result(9.5, 'us', band) == 'pass'
    shown = verdict(50.0, 'MB/s', Reference(100.0, None, None, 'MB/s', 's'),
                    ['n1'])
    assert (shown['check_perf_result'], shown['check_perf_ref']) == \
        ('informational', 100.0)
    other_unit = verdict(50.0, 'MiB/s', floor, ['n1'])
    assert (other_unit['check_perf_result'], other_unit['check_perf_ref']) \
        == ('informational', None)
    assert result(50.0, 'MB/s', None) == 'informational'
    assert verdict(99.9, 'MB/s', floor, ['n1'])['verdict_basis'] == \
        'published'
