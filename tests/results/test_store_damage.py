"""The store never lies, without ReFrame: whole lines or none on a real full
disk, a torn tail cut, every bad line or entry skipped by every reader with
a warning naming file and line, the ledger writable before anything is sent,
permanent refusals named as such, and settings that stop or warn in one
line. `clusterproof` runs as a user runs it, against the loopback API."""
import base64
import collections
import json
import os
import subprocess
import sys

import pytest

from config.results.azure import ledger
from config.results.rows import schema as row_schema
from config.results import settings
from config.results.store import files as store
from scripts.cli import main as cli
from tests.support.helpers import DATA, REPO
from tests.support.reporting_helpers import (run_sync, session_env,
                                             shipped_ids, store_session)
from tests.support.small_disk import small_disk


def clusterproof(env, *args, timeout=60):
    return subprocess.run([sys.executable, str(REPO / 'scripts' /
                                               'clusterproof'), *args],
                          env=env, cwd=str(REPO), capture_output=True,
                          text=True, timeout=timeout)


def row(record_id, **more):
    return row_schema.make_row({'record_id': record_id, 'check_name': 'T',
                             'TimeGenerated': '2026-11-30T01:00:00+00:00',
                             'check_perf_var': 'm', 'check_perf_value': 1.5,
                             **more})


# Writing: whole lines or nothing.
def test_a_torn_tail_is_cut_before_the_next_append(tmp_path, capsys):
    session = store.SessionFile('20261130T010203Z-aaaaaaaa', tmp_path)
    session.append(row('a'))
    with open(session.path, 'ab') as fp:      # a writer killed mid-line
        fp.write(b'{"TimeGenerated":"2026-11-30","reframe_versio')
    session.append(row('b'))
    assert 'cut a torn last line' in capsys.readouterr().err
    lines = session.path.read_bytes().splitlines(keepends=True)
    assert [json.loads(line)['record_id'] for line in lines] == ['a', 'b']
    assert [r['record_id'] for r in store.iter_rows(tmp_path)] == ['a', 'b']


def test_a_full_disk_takes_a_row_whole_or_not_at_all(tmp_path):
    with small_disk(tmp_path / 'results', 64) as disk:
        session = store.SessionFile('20261130T010203Z-aaaaaaaa',
                                    disk.path)
        session.append(row('first'))
        before = session.path.read_bytes()
        disk.fill(leave=2000)
        big = row('big', check_fail_reason='x' * 20000)
        with pytest.raises(OSError):
            session.append_rows([row('small'), big])
        # nothing of the refused write stays behind to glue onto the next
        assert session.path.read_bytes() == before
        with pytest.raises(OSError):
            ledger.Ledger(disk.path / 'x.shipped').record(['r' * 9000])
        disk.free()
        session.append(row('after'))
        assert [r['record_id'] for r in store.iter_rows(disk.path)] == \
            ['first', 'after']


def test_ingest_on_a_full_disk_stores_nothing_and_says_so(tmp_path):
    home = tmp_path / 'home'
    with small_disk(home / 'results', 64) as disk:
        disk.fill()
        result = clusterproof(session_env(tmp_path), 'ingest', 'stream',
                              str(DATA / 'stream' /
                                  'stream_c_omp1_10M.out'),
                              '--system', 'local', '--partition', 'default')
        assert result.returncode == 1
        assert 'nothing stored' in result.stderr
        assert 'No space left on device' in result.stderr
        assert 'Traceback' not in result.stderr
        assert [p.name for p in disk.path.rglob('*') if p.is_file()] == \
            [disk.ballast.name]


# Reading: every reader skips what it cannot read, and says so.
def damaged_home(home):
    """Two sessions of good rows, and every kind of damage the issue
    found: binary bytes, a JSON array, NaN, a wrongly typed value, a
    numeric record_id, a directory, a dangling link and a FIFO named
    *.jsonl, and binary bytes in a ledger."""
    good = store_session(home, rows=3)
    other = store_session(home, rows=2)
    with open(other.path, 'ab') as fp:
        fp.write(b'\xff\xfe\x00\x9c binary\n')
        fp.write(b'[1,2,3]\n')
        fp.write(json.dumps(row('nan-row')).replace(
            '"check_perf_value": 1.5', '"check_perf_value": NaN').encode()
            + b'\n')
        fp.write(json.dumps({**row('typed-row'), 'check_perf_value': 'fast'})
                 .encode() + b'\n')
        fp.write(json.dumps(row(12345)).encode() + b'\n')
    day = good.path.parent
    (day / 'directory.jsonl').mkdir()
    (day / 'dangling.jsonl').symlink_to(home / 'nowhere.jsonl')
    os.mkfifo(day / 'fifo.jsonl')
    with open(ledger.ledger_path(good.path), 'wb') as fp:
        fp.write(b'\x00\xff\xfe garbage\n')
    wanted = [f'{good.session_id}-{i:05d}' for i in range(3)] + \
        [f'{other.session_id}-{i:05d}' for i in range(2)] + \
        ['nan-row', 'typed-row', '12345']
    return other.path, wanted


def test_bad_lines_and_entries_are_skipped_by_every_reader(tmp_path,
                                                           fake_azure):
    home = tmp_path / 'home'
    damaged, wanted = damaged_home(home)
    env = session_env(tmp_path, fake_azure)

    dry = run_sync(env, '--dry-run')
    assert dry.returncode == 0, dry.stderr
    assert f'would ship {len(wanted)} row(s) in all' in dry.stdout
    for what in (f'{damaged} line 3: not UTF-8 text; skipped',
                 f'{damaged} line 4: a JSON list, not an object; skipped',
                 f'{damaged} line 5: NaN read as null',
                 f'{damaged} line 6: check_perf_value (str, not real) '
                 'read as null',
                 'directory.jsonl: not a regular file',
                 'fifo.jsonl: not a regular file', 'dangling.jsonl: No such',
                 ".shipped line 1: not '<record_id> <time>'; skipped"):
        assert what in dry.stderr
    assert 'Traceback' not in dry.stderr

    synced = run_sync(env)
    assert synced.returncode == 0, synced.stderr
    received = collections.Counter(shipped_ids(fake_azure))
    assert received == collections.Counter(wanted)
    by_id = {r['record_id']: r for r in fake_azure.rows}
    assert by_id['nan-row']['check_perf_value'] is None
    assert by_id['typed-row']['check_perf_value'] is None
    again = run_sync(env)       # the numeric record_id is not sent again
    assert again.returncode == 0 and 'nothing to ship' in again.stdout
    assert sum(received.values()) == len(fake_azure.rows)

    query = clusterproof(env, 'query', '--json', 'results', '--local')
    assert query.returncode == 0, query.stderr
    assert {r['record_id'] for r in json.loads(query.stdout)} == set(wanted)
    assert all(r['check_perf_value'] is None or
               r['check_perf_value'] == r['check_perf_value']
               for r in json.loads(query.stdout))
    report = clusterproof(env, 'report', '--local', '--out',
                          str(tmp_path / 'r.html'))
    assert report.returncode == 0, report.stderr
    sample = DATA / 'stream' / 'stream_c_omp1_10M.out'
    ingest = clusterproof(env, 'ingest', 'stream', str(sample), '--system',
                          'local', '--partition', 'default')
    assert 'Traceback' not in ingest.stderr, ingest.stderr
    for result in (query, report, ingest):
        assert 'fifo.jsonl: not a regular file' in result.stderr
    for result in (query, report):
        assert f'{damaged} line 3: not UTF-8 text; skipped' in result.stderr
        assert f'{damaged} line 4: a JSON list' in result.stderr


# Sending: the ledger first; refusals named for what they are.
def test_nothing_is_sent_while_the_ledger_cannot_be_written(tmp_path,
                                                            fake_azure):
    home = tmp_path / 'home'
    session = store_session(home, rows=4)
    day = session.path.parent
    saved = session.path.read_bytes()
    with small_disk(day, 256) as disk:
        session.path.write_bytes(saved)
        disk.read_only()
        env = session_env(tmp_path, fake_azure)
        for _ in range(3):
            refused = run_sync(env)
            assert refused.returncode == 1
            assert 'cannot write the ledger' in refused.stderr
        assert fake_azure.uploads == [] and fake_azure.rejected == []
        disk.read_only(False)
        synced = run_sync(env)
        assert synced.returncode == 0, synced.stderr
        assert sorted(shipped_ids(fake_azure)) == \
            [f'{session.session_id}-{i:05d}' for i in range(4)]


def test_a_wrong_stream_is_a_permanent_refusal(tmp_path, fake_azure):
    store_session(tmp_path / 'home', rows=3)
    env = session_env(tmp_path, fake_azure,
                      LOGS_DCR_STREAM_NAME='Custom-Wrong_CL')
    result = run_sync(env)
    assert result.returncode == 2
    assert 'refused the upload permanently (404 InvalidStream)' in \
        result.stderr
    assert 'LOGS_DCR_STREAM_NAME' in result.stderr
    assert 'again later' not in result.stderr
    assert len(fake_azure.rejected) == 1     # not retried


def test_an_oversized_row_is_set_aside_for_good(tmp_path, fake_azure):
    home = tmp_path / 'home'
    session = store_session(home, rows=3)
    noise = base64.b64encode(os.urandom(1_200_000)).decode()  # no gzip gain
    session.append(row('huge', check_fail_reason=noise))
    env = session_env(tmp_path, fake_azure)
    first = run_sync(env)
    assert first.returncode == 1
    assert '1 row(s) set aside for good (413' in first.stderr
    aside = ledger.read_rejected(ledger.rejected_path(session.path))
    assert list(aside) == ['huge'] and aside['huge']['size'] > 1_600_000
    assert 'ContentLengthLimitExceeded' in aside['huge']['reason']
    assert len(set(shipped_ids(fake_azure))) == 3
    calls = len(fake_azure.uploads) + len(fake_azure.rejected)
    second = run_sync(env)
    assert second.returncode == 1
    assert '1 row(s) set aside earlier' in second.stderr
    assert len(fake_azure.uploads) + len(fake_azure.rejected) == calls


# Settings: one line each.
@pytest.mark.parametrize('value', ['inf', 'abc', 'nan', '-5'])
def test_a_bad_tuning_setting_warns_once_and_uses_the_default(
        value, monkeypatch, capsys):
    monkeypatch.setattr(settings, '_warned', set())
    monkeypatch.setenv('CLUSTERPROOF_FLUSH_TIMEOUT', value)
    assert settings.seconds('CLUSTERPROOF_FLUSH_TIMEOUT', 30.0) == 30.0
    assert settings.seconds('CLUSTERPROOF_FLUSH_TIMEOUT', 30.0) == 30.0
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert f"CLUSTERPROOF_FLUSH_TIMEOUT='{value}'" in err
    assert 'using the default 30' in err


def test_a_home_that_is_a_file_or_missing_stops_in_one_line(
        tmp_path, fake_azure, monkeypatch, capsys):
    for name, value in fake_azure.env().items():
        monkeypatch.setenv(name, value)
    afile = tmp_path / 'home-file'
    afile.write_text('')
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(afile))
    for args in (['sync'], ['sync', '--dry-run'],
                 ['query', 'results', '--local'],
                 ['report', '--local', '--out', str(tmp_path / 'r.html')],
                 ['ingest', 'stream', str(afile), '--system', 'local',
                  '--partition', 'default']):
        assert cli.main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count('\n') == 1 and 'not a directory' in err, args
    missing = tmp_path / 'typo'
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(missing))
    for args in (['sync'], ['query', 'results', '--local'],
                 ['report', '--local', '--out', str(tmp_path / 'r.html')]):
        assert cli.main(args) == 2, args
        captured = capsys.readouterr()
        assert captured.err.count('\n') == 1, args
        assert 'does not exist' in captured.err and captured.out == ''
    assert not missing.exists() and not (tmp_path / 'r.html').exists()
    # the commands that write create it
    stored = cli.main(['ingest', 'stream', str(DATA /
                                               'stream' /
                                               'stream_c_omp1_10M.out'),
                       '--system', 'local', '--partition', 'default'])
    assert stored == 0 and list(missing.glob('results/*/*.jsonl'))


def test_malformed_azure_partitions_stop_reframe_in_one_line(tmp_path):
    from tests.support.helpers import run_reframe, suite_env
    for spec in ('hbv4=', 'nosuch=hpc', 'hbv4,,'):
        env = suite_env(tmp_path / 'home',
                        {'CLUSTERPROOF_AZURE_PARTITIONS': spec})
        result = run_reframe('--system', 'azure', '--show-config=systems',
                             env=env, cwd=str(REPO), timeout=120)
        assert result.returncode != 0
        assert 'CLUSTERPROOF_AZURE_PARTITIONS' in result.stdout + \
            result.stderr
        assert 'Traceback' not in result.stdout + result.stderr


@pytest.mark.parametrize('since', ['99999999d', '9999-12-31', '1000000h'])
def test_since_out_of_range_is_a_usage_error(since, tmp_path, monkeypatch,
                                             capsys):
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        cli.main(['query', 'results', '--since', since])
    assert exit_.value.code == 2
    assert 'is not a time from 1970 to now' in capsys.readouterr().err


@pytest.mark.parametrize('args', [['--days', 'inf'], ['--days', 'nan'],
                                  ['--min-age', '-1'],
                                  ['--min-age', '1e300']])
def test_sync_spans_out_of_range_are_usage_errors(args, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(['sync', '--verify', *args])
    assert exit_.value.code == 2
    assert 'is not a number from 0 to' in capsys.readouterr().err


def test_acceptance_counts_results_the_store_could_not_keep(tmp_path,
                                                           monkeypatch):
    from config.results.handlers import store_handler
    from scripts.acceptance import session
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path))
    handler = store_handler.StoreHandler('20261130T010203Z-cccccccc',
                                   tmp_path / 'perflogs')
    handler.unstored.keep([row('a'), row('b')])
    line = handler.unstored_line(list(handler.unstored.rows))
    handler.unstored.rows.clear()
    handler.close()
    assert '2 row(s) could not be stored in' in line
    log = tmp_path / 'phase.log'
    log.write_text(f'[ PASSED ] ...\n{line}\nLog Analytics: 3 of 3\n')
    assert session.unkept(log) == [line]
    log.write_text('clusterproof: 3 row(s) stored in /x.jsonl\n')
    assert session.unkept(log) == []


def test_a_crash_inside_acceptance_exits_2(monkeypatch, capsys):
    from scripts.acceptance import session

    def crash(options, say):
        raise RuntimeError('boom')
    monkeypatch.setattr(session, 'run', crash)
    assert cli.main(['acceptance']) == 2
    assert 'clusterproof acceptance: crashed' in capsys.readouterr().err
    for unit in (REPO / 'scripts' / 'schedules').rglob('*.service'):
        success = [line for line in unit.read_text().splitlines()
                   if line.startswith('SuccessExitStatus=')]
        assert success and '2' not in success[0].split('=')[1].split()


def test_the_table_escapes_control_characters_json_keeps_them(tmp_path):
    session = store.SessionFile('20261130T010203Z-aaaaaaaa',
                                tmp_path / 'home' / 'results')
    hostile = 'a\x1b]0;owned\x07b\r\nFORGED  row\x9b2J'
    session.append(row('r1', check_name=hostile))
    kql = tmp_path / 'names.kql'
    kql.write_text('clusterproof_results | project record_id, check_name\n')
    env = session_env(tmp_path)
    table = clusterproof(env, 'query', str(kql))
    assert table.returncode == 0, table.stderr
    assert '\x1b' not in table.stdout and '\r' not in table.stdout
    assert '\x9b' not in table.stdout and '\x07' not in table.stdout
    assert 'a\\x1b]0;owned\\x07b\\r\\nFORGED  row\\x9b2J' in table.stdout
    assert len(table.stdout.splitlines()) == 3       # header, rule, row
    as_json = clusterproof(env, 'query', '--json', str(kql))
    assert json.loads(as_json.stdout)[0]['check_name'] == hostile
