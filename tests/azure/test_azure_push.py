"""Perf records reach the local store and, when configured, a loopback Logs
Ingestion endpoint, through real ReFrame running the real ior check (with a
replay stand-in for the ior binary, which cannot be built here), real
azure-identity (managed identity through IDENTITY_ENDPOINT/IDENTITY_HEADER)
and the project's batching httpjson handler (config/results/azure/live_push.py)."""
import os

import pytest

from config.results.rows import schema as row_schema
from tests.support.helpers import REPO, STANDINS, run_reframe, stored_rows

AZURE_VARS = ('DATA_COLLECTION_ENDPOINT', 'LOGS_DCR_RULE_ID',
              'LOGS_DCR_STREAM_NAME', 'IDENTITY_ENDPOINT', 'IDENTITY_HEADER',
              'RFM_SYSTEM')


def suite_env(tmp_path, extra=None):
    env = {k: v for k, v in os.environ.items() if k not in AZURE_VARS}
    env['CLUSTERPROOF_HOME'] = str(tmp_path / 'home')
    env['PATH'] = f'{STANDINS}{os.pathsep}{env["PATH"]}'
    env.update(extra or {})
    return env


def run_ior(tmp_path, env, *more):
    return run_reframe('--system', 'local', '-c', 'checks/storage/ior.py',
                       '--prefix', str(tmp_path / 'rfm'), *more,
                       env=env, cwd=str(REPO))


def test_records_land_in_the_store_without_azure(tmp_path):
    result = run_ior(tmp_path, suite_env(tmp_path), '-r')
    assert result.returncode == 0, result.stdout + result.stderr
    rows = stored_rows(tmp_path / 'home')
    values = {row['check_perf_var']: row['check_perf_value'] for row in rows}
    # the replayed ior 4.0.0 output's summary means
    assert values == {'write_bandwidth_mib': 613.91,
                      'read_bandwidth_mib': 12827.84}
    for row in rows:
        assert list(row) == row_schema.column_names()
        assert row['check_name'] == 'IorCheck'
        assert row['check_system'] == 'local'
        assert row['check_result'] == 'pass'
        assert row['check_perf_result'] == 'no_reference'
        assert row['check_jobid']


def test_records_are_pushed_to_log_analytics(tmp_path, fake_azure):
    env = suite_env(tmp_path, fake_azure.env())
    result = run_ior(tmp_path, env, '-r')
    assert result.returncode == 0, result.stdout + result.stderr
    assert fake_azure.rejected == []
    # one POST for the test: both perf variables in one JSON array
    assert len(fake_azure.uploads) == 1
    upload = fake_azure.uploads[0]
    assert isinstance(upload.body, list) and len(upload.body) == 2
    assert upload.headers['Authorization'] == f'Bearer {fake_azure.token}'
    for row in upload.body:
        assert set(row) == set(row_schema.column_names())
    assert fake_azure.token_requests >= 1
    shipped = {row['record_id']: row for row in fake_azure.rows}
    stored = {row['record_id']: row for row in stored_rows(tmp_path / 'home')}
    assert shipped == stored
    assert fake_azure.token not in (tmp_path / 'home').joinpath(
        'results').rglob('*.jsonl').__next__().read_text()


def test_server_errors_are_retried_and_lose_nothing(tmp_path, fake_azure):
    fake_azure.failures = [(500, {}), (503, {})]
    env = suite_env(tmp_path, fake_azure.env())
    result = run_ior(tmp_path, env, '-r')
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'could not log performance data' not in output
    assert [r.status for r in fake_azure.rejected] == [500, 503]
    values = {row['check_perf_var'] for row in stored_rows(tmp_path / 'home')}
    assert values == {'write_bandwidth_mib', 'read_bandwidth_mib'}
    assert {row['check_perf_var'] for row in fake_azure.rows} == values


def test_throttling_is_retried(tmp_path, fake_azure):
    fake_azure.failures = [(429, {'Retry-After': '1'})]
    env = suite_env(tmp_path, fake_azure.env())
    result = run_ior(tmp_path, env, '-r')
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r.status for r in fake_azure.rejected] == [429]
    assert len(fake_azure.rows) == 2


def test_dry_run_ships_and_stores_nothing(tmp_path, fake_azure):
    env = suite_env(tmp_path, fake_azure.env())
    result = run_ior(tmp_path, env, '--dry-run')
    assert result.returncode == 0, result.stdout + result.stderr
    assert fake_azure.uploads == [] and fake_azure.rejected == []
    assert stored_rows(tmp_path / 'home') == []


def test_the_loopback_endpoint_speaks_the_sdk_protocol(fake_azure):
    """The real azure-monitor-ingestion client uploads to the stand-in, so
    the stand-in follows the documented API (gzip, arrays, 204)."""
    from azure.identity import ManagedIdentityCredential
    from azure.monitor.ingestion import LogsIngestionClient
    os.environ.update({k: v for k, v in fake_azure.env().items()
                       if k.startswith('IDENTITY_')})
    try:
        client = LogsIngestionClient(
            endpoint=fake_azure.base_url,
            credential=ManagedIdentityCredential(),
            connection_verify=fake_azure.ca_bundle)
        rows = [row_schema.make_row({'record_id': str(i)}) for i in range(3)]
        client.upload(rule_id=fake_azure.rule_id,
                      stream_name=fake_azure.stream, logs=rows)
    finally:
        for key in ('IDENTITY_ENDPOINT', 'IDENTITY_HEADER'):
            os.environ.pop(key, None)
    assert [row['record_id'] for row in fake_azure.rows] == ['0', '1', '2']
    assert fake_azure.uploads[0].headers.get('Content-Encoding') == 'gzip'
