"""The live push through real ReFrame sessions of the project's config,
against the loopback Logs Ingestion API with injected faults, then
`clusterproof sync`: every record arrives, none twice, the run's exit status
is the tests', the store is complete, the end-of-session line is right and
no token is written anywhere."""
import collections
import threading

from tests.support.loopback_azure import DROP
from tests.support.reporting_helpers import (assert_no_token, end_line,
                                             run_session, run_sync,
                                             session_env, shipped_ids,
                                             stored_ids)


def assert_each_once(fake, tmp_path):
    stored = stored_ids(tmp_path)
    shipped = shipped_ids(fake)
    assert len(set(stored)) == len(stored)
    assert collections.Counter(shipped) == collections.Counter(stored)


def test_faults_are_retried_and_every_record_arrives_once(tmp_path,
                                                          fake_azure):
    fake_azure.token_lifetime = 60     # every call needs a fresh token
    fake_azure.failures = [(429, {'Retry-After': '1'}), (503, {}),
                           (DROP, {}), (413, {}), (429, {}), (502, {})]
    env = session_env(tmp_path, fake_azure, tests=6, metrics=3)
    result = run_session(tmp_path, env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert len(stored_ids(tmp_path)) == 18
    assert_each_once(fake_azure, tmp_path)
    assert end_line(result.stdout) == (18, 18, 0, '')
    assert [r.status for r in fake_azure.rejected] == \
        [429, 503, DROP, 413, 429, 502]
    # one POST per test at most (the 413 split one batch in two)
    assert len(fake_azure.uploads) <= 6 + 1
    for upload in fake_azure.uploads:
        assert isinstance(upload.body, list) and upload.body
    assert len(fake_azure.tokens) > 1
    assert 'could not log performance data' not in output
    assert_no_token(fake_azure, tmp_path, output)


def test_a_flaky_endpoint_gets_every_record(tmp_path, fake_azure):
    """The issue's measurement: 30% 429 (Retry-After 1 s), 10% 503, 5%
    dropped connections, 20 s tokens; 100 records of a 20-test session.
    With ReFrame's stock handler 49 arrived; now all, live or by sync."""
    fake_azure.token_lifetime = 20
    fake_azure.random_faults = [(0.30, 429, {'Retry-After': '1'}),
                                (0.10, 503, {}), (0.05, DROP, {})]
    env = session_env(tmp_path, fake_azure, tests=20, metrics=5)
    result = run_session(tmp_path, env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    shipped, offered, left, _ = end_line(result.stdout)
    assert offered == 100 and shipped + left == 100
    assert len(set(shipped_ids(fake_azure))) == shipped
    synced = run_sync(env)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert_each_once(fake_azure, tmp_path)
    assert len(fake_azure.rows) == 100
    assert fake_azure.rejected      # the faults did happen
    assert_no_token(fake_azure, tmp_path, output, synced.stdout)


def test_endpoint_down_for_the_whole_session_then_sync(tmp_path, fake_azure):
    fake_azure.stop()
    env = session_env(tmp_path, fake_azure, tests=4, metrics=3,
                      CLUSTERPROOF_FLUSH_TIMEOUT=2, CLUSTERPROOF_TEST_FAIL=3)
    result = run_session(tmp_path, env)
    output = result.stdout + result.stderr
    # the failing test decides the exit status, not Log Analytics
    assert result.returncode == 1, output
    assert 'SyntheticPerf %index=3' in output and 'FAIL' in output
    # a failed test has rows too (check_result 'fail'): 4 tests x 3
    assert len(stored_ids(tmp_path)) == 12
    assert end_line(result.stdout) == (0, 12, 12, 'connection x12')
    assert 'could not initialize' not in output

    fake_azure.start()
    synced = run_sync(env)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert '12 of 12 rows shipped in 1 call(s)' in synced.stdout
    assert_each_once(fake_azure, tmp_path)
    again = run_sync(env)
    assert again.returncode == 0
    assert 'nothing to ship' in again.stdout
    assert_each_once(fake_azure, tmp_path)
    assert_no_token(fake_azure, tmp_path, output, synced.stdout,
                    synced.stderr)


def test_endpoint_down_at_start_and_back_mid_session(tmp_path, fake_azure):
    fake_azure.stop()
    env = session_env(tmp_path, fake_azure, tests=5, metrics=2,
                      CLUSTERPROOF_TEST_SLEEP=1)
    back = threading.Timer(3.0, fake_azure.start)
    back.start()
    try:
        result = run_session(tmp_path, env, '--exec-policy=serial')
    finally:
        back.cancel()
        back.join()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert end_line(result.stdout) == (10, 10, 0, '')
    assert_each_once(fake_azure, tmp_path)
    synced = run_sync(env)
    assert synced.returncode == 0 and 'nothing to ship' in synced.stdout
    assert_each_once(fake_azure, tmp_path)


def test_forbidden_stops_the_push_with_one_warning_then_sync(tmp_path,
                                                             fake_azure):
    fake_azure.failures = [(403, {})] * 50
    env = session_env(tmp_path, fake_azure, tests=3, metrics=2)
    result = run_session(tmp_path, env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert output.count('Monitoring Metrics Publisher') == 1
    assert end_line(result.stdout) == (0, 6, 6, '403 Injected x6')
    # one call, then the push stopped for the session
    assert len(fake_azure.rejected) == 1
    assert fake_azure.uploads == []
    assert len(stored_ids(tmp_path)) == 6

    refused = run_sync(env)
    assert refused.returncode == 2    # a refusal: what to change, not "later"
    assert 'Monitoring Metrics Publisher' in refused.stderr
    fake_azure.failures = []      # the role is granted
    synced = run_sync(env)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert_each_once(fake_azure, tmp_path)
    assert_no_token(fake_azure, tmp_path, output, refused.stderr)


def test_bad_settings_warn_once_and_the_run_goes_on(tmp_path, fake_azure):
    env = session_env(tmp_path, fake_azure, tests=2, metrics=2)
    env['DATA_COLLECTION_ENDPOINT'] = 'http//typo.example'
    env['LOGS_DCR_RULE_ID'] = 'dcr-123'
    result = run_session(tmp_path, env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert output.count('not sending results to Log Analytics') == 1
    assert 'is not an https URL' in output
    assert "'dcr-' and 32 hex digits" in output
    assert len(stored_ids(tmp_path)) == 4
    assert fake_azure.uploads == [] and fake_azure.rejected == []
    assert 'Log Analytics:' not in result.stdout
    synced = run_sync(env)
    assert synced.returncode == 2
    assert 'is not an https URL' in synced.stderr


def test_a_handler_that_cannot_be_made_is_left_out(tmp_path, monkeypatch):
    """ReFrame stops the session on any error from a handler factory; the
    live push's factory answers None instead (ReFrame goes on without)."""
    from config.results.azure import live_push
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path / 'home'))

    class SiteConfig:
        options = {'url': 'https://127.0.0.1:9/x', 'session_id': 's1',
                   'json_formatter': lambda: None}    # wrong signature

        def get(self, key):
            return self.options.get(key.rsplit('/', 1)[1])

    assert live_push._create_handler(SiteConfig(), 'p/0') is None
    SiteConfig.options['json_formatter'] = None
    handler = live_push._create_handler(SiteConfig(), 'p/0')
    assert isinstance(handler, live_push.BatchingHTTPJSONHandler)
    handler.close()


def test_no_identity_leaves_everything_for_sync(tmp_path, fake_azure):
    env = session_env(tmp_path, fake_azure, tests=2, metrics=2,
                      CLUSTERPROOF_FLUSH_TIMEOUT=3)
    env['IDENTITY_HEADER'] = 'not-the-right-one'    # no token is issued
    result = run_session(tmp_path, env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert end_line(result.stdout) == (0, 4, 4, 'no token x4')
    assert fake_azure.uploads == [] and fake_azure.rejected == []
    refused = run_sync(env)
    assert refused.returncode == 2
    assert 'no Azure token' in refused.stderr
    synced = run_sync(session_env(tmp_path, fake_azure))
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert_each_once(fake_azure, tmp_path)
