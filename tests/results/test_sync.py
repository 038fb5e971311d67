"""`clusterproof sync` on stored rows, against the loopback Logs Ingestion
and query APIs, through the real azure-monitor-ingestion and
azure-monitor-query clients."""
import collections
import re

from config.results import locks
from config.results.azure import ledger
from config.results.rows import schema as row_schema
from config.results.store import files as store
from scripts.cli import main as cli
from tests.support.reporting_helpers import (assert_no_token, run_sync,
                                             session_env, shipped_ids,
                                             store_session, stored_ids)


def counts(fake):
    return collections.Counter(shipped_ids(fake))


def test_not_configured_says_what_to_set(tmp_path, monkeypatch):
    for name in ('DATA_COLLECTION_ENDPOINT', 'LOGS_DCR_RULE_ID'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path / 'home'))
    assert cli.main(['sync']) == 2
    result = run_sync(session_env(tmp_path))
    assert result.returncode == 2
    assert 'DATA_COLLECTION_ENDPOINT' in result.stderr
    assert 'LOGS_DCR_RULE_ID' in result.stderr
    assert 'still in the local store' in result.stderr


def test_ships_the_backlog_once_and_keeps_real_dates(tmp_path, fake_azure):
    home = tmp_path / 'home'
    store_session(home, rows=4, day='20261120', completion=False)
    store_session(home, rows=3)
    env = session_env(tmp_path, fake_azure)
    dry = run_sync(env, '--dry-run')
    assert dry.returncode == 0
    assert 'would ship 7 row(s) in all' in dry.stdout
    assert fake_azure.uploads == [] and fake_azure.rejected == []

    result = run_sync(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '7 of 7 rows shipped in 1 call(s)' in result.stdout
    assert counts(fake_azure) == collections.Counter(stored_ids(tmp_path))
    # a backfilled row keeps its date beside TimeGenerated, which Log
    # Analytics replaces when it is over 2 days old
    for row in fake_azure.rows:
        assert row['check_job_completion_time'] == row['TimeGenerated']
        assert row['check_job_completion_time'].startswith('2026-11-')
    assert fake_azure.uploads[0].headers.get('Content-Encoding') == 'gzip'

    again = run_sync(env)
    assert again.returncode == 0 and 'nothing to ship' in again.stdout
    assert len(fake_azure.uploads) == 1
    assert_no_token(fake_azure, tmp_path, result.stdout, result.stderr)


def test_session_and_since_select(tmp_path, fake_azure):
    home = tmp_path / 'home'
    old = store_session(home, rows=2, day='20261101')
    new = store_session(home, rows=2, day='20261125')
    env = session_env(tmp_path, fake_azure)
    assert run_sync(env, '--since', '2026-11-20').returncode == 0
    assert set(shipped_ids(fake_azure)) == {
        f'{new.session_id}-{i:05d}' for i in range(2)}
    assert run_sync(env, '--session', old.session_id).returncode == 0
    assert len(fake_azure.rows) == 4
    bad = run_sync(env, '--since', 'yesterday')
    assert bad.returncode == 2 and 'is not a date' in bad.stderr


def test_a_failed_chunk_is_left_and_the_next_sync_resumes(tmp_path,
                                                          fake_azure):
    # ~3 chunks of under 1 MB each
    store_session(tmp_path / 'home', rows=2400, padding=600)
    env = session_env(tmp_path, fake_azure)
    fake_azure.failures = [(204, {}), (400, {})]
    first = run_sync(env, '--uploads', '1')    # one call at a time
    # a 400 is a refusal no retry cures: named, exit 2, nothing more sent
    assert first.returncode == 2
    assert 'row(s) left in the local store (400 Injected x' in first.stderr
    assert 'refused the upload permanently (400 Injected)' in first.stderr
    assert len(fake_azure.rejected) == 1 and len(fake_azure.uploads) == 1
    for upload in fake_azure.uploads:
        assert len(upload.body) < 2400
    left_after_first = 2400 - len(fake_azure.rows)
    assert left_after_first > 0
    second = run_sync(env)
    assert second.returncode == 0, second.stderr
    assert f'{left_after_first} of {left_after_first} rows shipped' in \
        second.stdout
    assert counts(fake_azure) == collections.Counter(stored_ids(tmp_path))
    assert max(counts(fake_azure).values()) == 1


def test_transient_faults_are_retried(tmp_path, fake_azure):
    store_session(tmp_path / 'home', rows=5)
    fake_azure.failures = [(502, {}), (429, {}), ('drop', {}),
                           (429, {'Retry-After': '1'}), (413, {})]
    result = run_sync(session_env(tmp_path, fake_azure))
    assert result.returncode == 0, result.stdout + result.stderr
    assert '5 of 5 rows shipped' in result.stdout
    assert max(counts(fake_azure).values()) == 1 and len(fake_azure.rows) == 5


def test_one_sync_at_a_time_and_running_sessions_are_left(tmp_path,
                                                         fake_azure):
    home = tmp_path / 'home'
    running = store_session(home, rows=2)
    finished = store_session(home, rows=2)
    env = session_env(tmp_path, fake_azure)
    other_sync = locks.FileLock(home / 'sync.lock')
    assert other_sync.acquire()
    try:
        blocked = run_sync(env)
    finally:
        other_sync.release()
    assert blocked.returncode == 1
    assert 'another clusterproof sync is running' in blocked.stderr
    assert fake_azure.uploads == []

    live = locks.FileLock(ledger.session_lock_path(running.path))
    assert live.acquire()
    try:
        result = run_sync(env)
    finally:
        live.release()
    assert result.returncode == 0
    assert f'session {running.session_id} is still running' in result.stdout
    assert {row['session_id'] for row in fake_azure.rows} == \
        {finished.session_id}


def answer_from(fake):
    """The workspace holds what the fake accepted: answer `record_id in`
    queries from it, checking the query's shape."""
    def answer(query, timespan):
        assert query.startswith('ReFrameResults_CL | ')
        assert timespan
        if query.endswith('take 0'):
            return []
        asked = set(re.findall(r"'([^']+)'", query))
        if '| project record_id, ' in query:    # the columns it holds
            columns = query.split('| project ')[1].split(', ')
            return [{name: row.get(name) for name in columns}
                    for upload in fake.uploads for row in upload.body
                    if row['record_id'] in asked]
        assert 'distinct record_id' in query
        return [{'record_id': rid} for rid in shipped_ids(fake)
                if rid in asked]
    return answer


def test_verify_reships_rows_lost_at_ingestion(tmp_path, fake_azure):
    store_session(tmp_path / 'home', rows=4)
    env = session_env(tmp_path, fake_azure)
    assert run_sync(env).returncode == 0
    lost = fake_azure.uploads[0].body.pop(1)['record_id']
    fake_azure.answer_query = answer_from(fake_azure)

    recent = run_sync(env, '--verify')       # acknowledged under 1 h ago
    assert recent.returncode == 0, recent.stderr
    assert lost not in shipped_ids(fake_azure)

    result = run_sync(env, '--verify', '--min-age', '0')
    assert result.returncode == 0, result.stdout + result.stderr
    assert '1 acknowledged row(s) are missing' in result.stdout
    assert counts(fake_azure) == collections.Counter(stored_ids(tmp_path))
    assert fake_azure.queries


def test_verify_reports_columns_the_workspace_dropped(tmp_path, fake_azure):
    # A workspace whose DCR predates schema 2.0: the Logs Ingestion API
    # accepts the rows (204) and silently drops reference_key.
    key = 'triad_bw|HB176rs_v4|threads=48|1n|-'
    store_session(tmp_path / 'home', rows=3,
                  columns={'reference_key': key})
    env = session_env(tmp_path, fake_azure)
    assert run_sync(env).returncode == 0
    held = [{name: value for name, value in row.items()
             if name != 'reference_key'}
            for upload in fake_azure.uploads for row in upload.body]
    assert {row['record_id'] for row in held} == set(stored_ids(tmp_path))

    def answer(query, timespan):
        if query.endswith('take 0'):
            return []
        asked = set(re.findall(r"'([^']+)'", query))
        if 'distinct record_id' in query:
            return [{'record_id': row['record_id']} for row in held
                    if row['record_id'] in asked]
        assert '| project record_id, ' in query and 'reference_key' in query
        return [{'record_id': row['record_id'], 'reference_key': None,
                 'check_name': row['check_name']}
                for row in held if row['record_id'] in asked]
    fake_azure.answer_query = answer

    result = run_sync(env, '--verify', '--min-age', '0')
    assert result.returncode == 0, result.stdout + result.stderr
    assert ('3 row(s) arrived with reference_key empty although it was '
            'sent') in result.stdout
    assert 'run `clusterproof deploy`' in result.stdout
    assert 'check_name empty' not in result.stdout
    assert 'missing from Log Analytics' not in result.stdout


def test_verify_without_read_rights_does_nothing(tmp_path, fake_azure):
    store_session(tmp_path / 'home', rows=2)
    fake_azure.answer_query = None          # the query API answers 403
    result = run_sync(session_env(tmp_path, fake_azure), '--verify')
    assert result.returncode == 2
    assert 'Log Analytics Reader' in result.stderr
    assert fake_azure.uploads == [] and fake_azure.rejected == []


def test_progress_shows_on_a_terminal_for_long_backlogs():
    import io
    from scripts.cli import sync

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        progress = sync.Progress(stream)
        progress(800, 2400)
        progress(2400, 2400)
        progress.done()
    assert terminal.getvalue() == (
        '\rclusterproof sync: 800 of 2400 rows shipped'
        '\rclusterproof sync: 2400 of 2400 rows shipped\n')
    assert pipe.getvalue() == ''
    short = sync.Progress(Terminal())
    short(5, 10)
    assert short.stream.getvalue() == ''
