"""At the end of a real ReFrame run the local store says where the rows went
(file, session id, count) and links its session to ReFrame's own session
UUID, the one `reframe --list-stored-sessions` shows."""
import json
import os
import re

from config.results.store import sessions
from tests.support.helpers import (REPO, STANDINS, run_reframe, stored_rows,
                                   suite_env)


def test_a_run_ends_with_where_its_rows_went(tmp_path):
    home = tmp_path / 'home'
    env = suite_env(home, {'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}'})
    result = run_reframe('--system', 'local', '-c', 'checks/storage/ior.py',
                         '--prefix', str(tmp_path / 'rfm'), '-r',
                         env=env, cwd=str(REPO))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = stored_rows(home)
    assert len(rows) == 2
    session_id = rows[0]['session_id']
    store_file = next((home / 'results').glob(f'*/{session_id}.jsonl'))
    line = re.search(r'^clusterproof: (\d+) row\(s\) stored in (\S+) '
                     r'\(session (\S+), ReFrame session ([0-9a-f-]{36})\)$',
                     result.stdout, re.M)
    assert line, result.stdout[-2000:]
    assert int(line[1]) == 2
    assert line[2] == str(store_file)
    assert line[3] == session_id
    reframe_uuid = line[4]

    entry = json.loads((home / 'sessions.jsonl').read_text().splitlines()[-1])
    assert entry['session_id'] == session_id
    assert entry['reframe_session_uuid'] == reframe_uuid
    assert entry['store_file'] == str(store_file) and entry['rows'] == 2
    report = json.loads(open(entry['report_file']).read())
    assert report['session_info']['uuid'] == reframe_uuid

    # The same UUID is in ReFrame's results database.
    listed = run_reframe('--list-stored-sessions', env=env, cwd=str(REPO),
                         timeout=120)
    assert reframe_uuid in listed.stdout, listed.stdout + listed.stderr


def test_no_report_matches_jobs_it_did_not_run(tmp_path):
    report = {'session_info': {'uuid': 'u-1'},
              'runs': [{'testcases': [{'name': 'IorCheck', 'jobid': 7}]}]}
    (tmp_path / 'run-report-0.json').write_text(json.dumps(report))
    assert sessions.find_reframe_session({('IorCheck', '7')}, 0, tmp_path) \
        == ('u-1', tmp_path / 'run-report-0.json')
    assert sessions.find_reframe_session({('IorCheck', '8')}, 0, tmp_path) \
        is None
    assert sessions.find_reframe_session({('IorCheck', '7')}, 2e9, tmp_path) \
        is None    # written before the session began
