"""The store never lies, in real ReFrame sessions of the project's config
against the loopback API: a results directory on a small tmpfs that fills
mid-session (room given back by a test at a defined record count), one that
is read-only, and two sessions at once on one home with a flaky endpoint
that sometimes accepts a batch and loses the 204. Each test counts the
distinct and the repeated record_ids received and stored."""
import collections
import re
import threading

from tests.support.helpers import REPO, run_reframe
from tests.support.loopback_azure import DROP, LOST
from tests.support.reporting_helpers import (SYNTHETIC, end_line, run_session,
                                             run_sync, session_env,
                                             shipped_ids, stored_ids)
from tests.support.small_disk import small_disk

ROW_BYTES = 2300       # a synthetic row is about 1.9 KB of JSON


def test_disk_full_mid_session_loses_nothing(tmp_path, fake_azure):
    home = tmp_path / 'home'
    with small_disk(home / 'results', 400) as disk:
        disk.fill(leave=20 * ROW_BYTES)    # room for about two tests
        env = session_env(tmp_path, fake_azure, tests=10, metrics=10,
                          CLUSTERPROOF_TEST_FREE_AT=6,
                          CLUSTERPROOF_TEST_FREE_FILE=str(disk.ballast))
        result = run_session(tmp_path, env, '--exec-policy=serial')
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert output.count('cannot write the local store') == 1
        # rows of the tests that met a full disk were kept and written
        # once the room came back: the store holds all 100, once each
        stored = stored_ids(tmp_path)
        assert len(stored) == 100 and len(set(stored)) == 100
        assert '100 row(s) stored in' in result.stdout
        assert 'could not be stored' not in output
        # meanwhile the live push shipped them (their only copy then)
        assert end_line(result.stdout) == (100, 100, 0, '')
        received = collections.Counter(shipped_ids(fake_azure))
        assert set(received) == set(stored)
        assert max(received.values()) == 1
        synced = run_sync(env)
        assert synced.returncode == 0, synced.stdout + synced.stderr
        assert 'nothing to ship' in synced.stdout
        assert collections.Counter(shipped_ids(fake_azure)) == received


def test_disk_full_for_the_whole_session_then_sync(tmp_path, fake_azure):
    home = tmp_path / 'home'
    with small_disk(home / 'results', 400) as disk:
        disk.fill(leave=20 * ROW_BYTES)
        env = session_env(tmp_path, fake_azure, tests=10, metrics=10)
        result = run_session(tmp_path, env)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        stored = stored_ids(tmp_path)
        assert 0 < len(stored) < 100 and len(set(stored)) == len(stored)
        unstored = 100 - len(stored)
        # the end lines tell the truth: what is stored, what only Log
        # Analytics holds, and that the perflog has every record
        assert f'{len(stored)} row(s) stored in' in result.stdout
        assert (f'{unstored} row(s) could not be stored in' in
                result.stdout), output
        found = re.search(r'(\d+) exist only in Log Analytics, (\d+) only '
                          r'in the perflog \(.*\), (\d+) nowhere',
                          result.stdout)
        assert found and int(found[3]) == 0, output
        shipped, offered, left, _ = end_line(result.stdout)
        assert offered == 100 and shipped + left == 100
        received = collections.Counter(shipped_ids(fake_azure))
        assert int(found[1]) + int(found[2]) == unstored
        assert len(received) == shipped
        session_calls = [{row['record_id'] for row in upload.body}
                         for upload in fake_azure.uploads]
        disk.free()
        synced = run_sync(env)
        assert synced.returncode == 0, synced.stdout + synced.stderr
        received = collections.Counter(shipped_ids(fake_azure))
        # every record produced reached Log Analytics; a row is repeated
        # only where a call's 204 could not be written to the full disk
        assert len(received) == 100 and max(received.values()) <= 2
        repeated = {rid for rid, count in received.items() if count > 1}
        assert not repeated or any(repeated <= call
                                   for call in session_calls)
        perflogs = ''.join(p.read_text() for p in
                           (home / 'perflogs').rglob('*.log'))
        assert perflogs.count('metric_') == 100


def test_read_only_results_the_live_push_still_ships_all(tmp_path,
                                                         fake_azure):
    home = tmp_path / 'home'
    with small_disk(home / 'results', 400) as disk:
        disk.read_only()
        # a bad tuning value: one warning, the default, and the end line
        env = session_env(tmp_path, fake_azure, tests=10, metrics=10,
                          CLUSTERPROOF_FLUSH_TIMEOUT='inf')
        result = run_session(tmp_path, env)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert output.count("CLUSTERPROOF_FLUSH_TIMEOUT='inf' is not a "
                            'number of seconds') == 1, output
        assert 'using the default 30' in output
        assert stored_ids(tmp_path) == []
        received = collections.Counter(shipped_ids(fake_azure))
        assert len(received) == 100 and max(received.values()) == 1
        assert end_line(result.stdout) == (100, 100, 0, '')
        assert ('100 row(s) could not be stored in' in result.stdout and
                '100 exist only in Log Analytics, 0 only in the perflog'
                in result.stdout), output
        assert 'are stored locally' not in output


def test_two_sessions_at_once_on_one_home(tmp_path, fake_azure):
    fake_azure.failures = [(LOST, {}), (DROP, {}), (LOST, {})]
    fake_azure.random_faults = [(0.15, 503, {}), (0.10, DROP, {}),
                                (0.15, LOST, {})]
    env = session_env(tmp_path, fake_azure, tests=5, metrics=20)
    results = [None, None]

    def session(index):
        # no --prefix: each session must get its own stage and output
        results[index] = run_reframe('--system', 'local', '-c', SYNTHETIC,
                                     '-r', env=env, cwd=str(REPO))
    threads = [threading.Thread(target=session, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert 'FileNotFoundError' not in output
        assert 'FAILED' not in output and 'PASSED' in output
    stored = stored_ids(tmp_path)
    assert len(stored) == 200 and len(set(stored)) == 200
    synced = run_sync(env)
    assert synced.returncode in (0, 1), synced.stdout + synced.stderr
    fake_azure.random_faults = []
    assert run_sync(env).returncode == 0
    received = collections.Counter(shipped_ids(fake_azure))
    assert set(received) == set(stored)
    # a row comes twice only where its batch was accepted and the 204
    # lost: exactly once more for every such call that held it
    lost = collections.Counter(row['record_id'] for upload in fake_azure.lost
                               for row in upload.body)
    assert fake_azure.lost
    assert {rid: count - 1 for rid, count in received.items()
            if count > 1} == dict(lost)
    # each session had its own stage and output, and its own log
    assert len(list((tmp_path / 'home' / 'runs').iterdir())) == 2
    assert len(list((tmp_path / 'home' / 'logs').glob('reframe_*.log'))) == 2


def test_a_ledger_that_fails_stops_the_live_push_at_once(tmp_path,
                                                         fake_azure):
    """The ledger turns unwritable after the push starts (here: a directory
    where the file was): the call whose 204 it cannot record is the only
    one sent twice; the push sends nothing more the store holds, and sync
    refuses to send until the ledger can be written."""
    results_dir = tmp_path / 'home' / 'results'
    env = session_env(tmp_path, fake_azure, tests=4, metrics=5,
                      CLUSTERPROOF_TEST_SLEEP=1)
    broken = []

    def break_the_ledger(stop):
        while not stop.is_set():
            # the push made sure it can write the ledger at its start
            for shipped in results_dir.glob('*/*.shipped'):
                shipped.unlink()
                shipped.mkdir()
                broken.append(shipped)
                return
            stop.wait(0.01)
    stop = threading.Event()
    watcher = threading.Thread(target=break_the_ledger, args=(stop,))
    watcher.start()
    try:
        result = run_session(tmp_path, env, '--exec-policy=serial')
    finally:
        stop.set()
        watcher.join()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert broken, output
    assert len(fake_azure.uploads) == 1          # then it stopped sending
    first_call = [row['record_id'] for row in fake_azure.uploads[0].body]
    assert 'cannot write the ledger' in output
    assert (f'{len(first_call)} of the shipped records are not in the '
            'ledger' in result.stdout), output
    assert end_line(result.stdout)[:3] == (len(first_call), 20,
                                           20 - len(first_call))

    refused = run_sync(env)
    assert refused.returncode == 1 and 'cannot write the ledger' in \
        refused.stderr
    assert len(fake_azure.uploads) == 1
    broken[0].rmdir()
    synced = run_sync(env)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    received = collections.Counter(shipped_ids(fake_azure))
    assert set(received) == set(stored_ids(tmp_path)) and len(received) == 20
    assert sorted(rid for rid, n in received.items() if n == 2) == \
        sorted(first_call)
    assert max(received.values()) == 2
