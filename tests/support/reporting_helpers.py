"""Shared by the reporting tests: a real ReFrame session of the synthetic
check through the project's config, against the loopback Azure."""
import datetime as dt
import re
import subprocess
import sys
from pathlib import Path

from config.results.rows import schema as row_schema
from config.results.store import files as store
from tests.support.helpers import REPO, run_reframe, stored_rows, suite_env

SYNTHETIC = 'tests/support/reframe_checks/synthetic_perf.py'


def session_env(tmp_path: Path, fake=None, tests=4, metrics=3, **more):
    extra = dict(fake.env()) if fake is not None else {}
    if fake is not None:
        extra.update(REQUESTS_CA_BUNDLE=fake.ca_bundle,
                     SSL_CERT_FILE=fake.ca_bundle)
    extra.update(CLUSTERPROOF_TEST_TESTS=str(tests),
                 CLUSTERPROOF_TEST_METRICS=str(metrics),
                 CLUSTERPROOF_FLUSH_TIMEOUT='20')
    extra.update({key: str(value) for key, value in more.items()})
    return suite_env(tmp_path / 'home', extra)


def run_session(tmp_path: Path, env: dict, *more: str):
    return run_reframe('--system', 'local', '-c', SYNTHETIC,
                       '--prefix', str(tmp_path / 'rfm'), '-r', *more,
                       env=env, cwd=str(REPO))


def run_sync(env: dict, *args: str):
    return subprocess.run([sys.executable, str(REPO / 'scripts' /
                                               'clusterproof'), 'sync', *args],
                          env=env, cwd=str(REPO), capture_output=True,
                          text=True, timeout=600)


def stored_ids(tmp_path: Path) -> list[str]:
    return [row['record_id'] for row in stored_rows(tmp_path / 'home')]


def shipped_ids(fake) -> list[str]:
    return [row['record_id'] for row in fake.rows]


def assert_no_token(fake, tmp_path: Path, *outputs: str):
    """No token the fake handed out appears in any file under tmp_path
    (store, ledgers, logs, reports, stage and output directories, debug
    dumps) or in any output."""
    tokens = fake.tokens
    assert tokens
    for text in outputs:
        for token in tokens:
            assert token not in text
    for path in tmp_path.rglob('*'):
        if path.is_file():
            data = path.read_bytes()
            for token in tokens:
                assert token.encode() not in data, path


def store_session(home, rows=3, day='20261130', completion=True,
                  padding=0, columns=None):
    """A finished session's store file, written by the store's writer."""
    serial = len(list(home.rglob('*.jsonl')))
    session = store.SessionFile(f'{day}T010203Z-{serial:08x}',
                                home / 'results')
    stamp = dt.datetime.strptime(day, '%Y%m%d').replace(
        hour=1, tzinfo=dt.timezone.utc).isoformat()
    for index in range(rows):
        session.append(row_schema.make_row({
            'record_id': f'{session.session_id}-{index:05d}',
            'session_id': session.session_id,
            'TimeGenerated': stamp,
            'check_job_completion_time': stamp if completion else None,
            'check_name': 'Stored', 'check_perf_var': f'metric_{index}',
            'check_perf_value': float(index),
            'check_fail_reason': 'x' * padding or None,
            **(columns or {}),
        }))
    return session


END_LINE = re.compile(r'^Log Analytics: (\d+) of (\d+) records shipped'
                      r"(?:; (\d+) left for 'clusterproof sync' \((.*)\))?$",
                      re.M)


def end_line(output: str):
    found = END_LINE.findall(output)
    assert len(found) == 1, output
    shipped, offered, left, reasons = found[0]
    return int(shipped), int(offered), int(left or 0), reasons
