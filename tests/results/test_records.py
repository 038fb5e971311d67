"""Rows of the results table: columns from the one schema file, JSON-safe
values, one-element arrays for the Logs Ingestion API, and no exception but
LoggingError out of anything ReFrame calls."""
import json
import math

import pytest
from reframe.core.exceptions import LoggingError

from config.results.azure import ingestion
from config.results.handlers import records
from config.results.rows import schema as row_schema
from tests.support.perf_records import StandInTest, perf_record


def test_every_row_has_exactly_the_schema_columns():
    row = records.row_from_log_record(perf_record(), 'session-1')
    assert list(row) == row_schema.column_names()
    assert row['check_perf_value'] == 512.5
    assert row['check_perf_ref'] == 500.0
    assert row['check_job_nodelist'] == ['hbv4-1', 'hbv4-2']
    assert row['check_tags'] == ['daily', 'storage']
    assert row['session_id'] == 'session-1'
    assert row['cluster'] == 'azure'
    assert row['check_job_completion_time'] == '2026-11-30T10:00:00+00:00'
    json.dumps(row, allow_nan=False)


def test_cluster_name_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv('CLUSTERPROOF_CLUSTER', 'prod-eastus')
    row = records.row_from_log_record(perf_record(), 's')
    assert row['cluster'] == 'prod-eastus'


def test_values_are_json_safe_and_typed():
    row = records.row_from_log_record(perf_record(
        check_perf_value=math.nan, check_perf_ref=math.inf,
        check_num_tasks='8', check_jobid=1234), 's')
    assert row['check_perf_value'] is None
    assert row['check_perf_ref'] is None
    assert row['check_num_tasks'] == 8
    assert row['check_jobid'] == '1234'


def test_a_value_without_reference_has_no_verdict():
    row = records.row_from_log_record(perf_record(
        check_perf_ref=0, check_perf_lower_thres=None,
        check_perf_upper_thres=None, check_perf_result='pass'), 's')
    assert row['check_perf_result'] == 'no_reference'


def test_a_failed_case_without_reference_has_no_reference_value():
    # sanity failed: no result, ReFrame's placeholder reference 0
    row = records.row_from_log_record(perf_record(
        check_perf_value=None, check_perf_ref=0, check_perf_lower_thres=None,
        check_perf_upper_thres=None, check_perf_result=None), 's')
    assert row['check_perf_ref'] is None
    # a failed case with a reference keeps it
    row = records.row_from_log_record(perf_record(
        check_perf_value=None, check_perf_ref=500,
        check_perf_lower_thres=-0.1, check_perf_upper_thres=None,
        check_perf_result=None), 's')
    assert row['check_perf_ref'] == 500.0


def test_each_handler_sends_the_same_row():
    record = perf_record()
    first = records.row_from_log_record(record, 's')
    again = records.row_from_log_record(record, 's')
    assert first is again and first['record_id']


def test_formatter_sends_a_one_element_array():
    format_record = ingestion.make_formatter('s')
    body = json.loads(format_record(perf_record(), {}, set()))
    assert isinstance(body, list) and len(body) == 1
    assert body[0]['check_perf_var'] == 'write_bandwidth_mib'


def test_formatter_drops_dry_run_records():
    class DryRunCheck:
        def is_dry_run(self):
            return True
    record = perf_record(__rfm_check__=DryRunCheck(), check_jobid=None,
                         check_perf_value=None)
    assert ingestion.make_formatter('s')(record, {}, set()) is None


def test_formatter_raises_only_logging_error(monkeypatch):
    def broken(record, session_id):
        raise KeyError('boom')
    monkeypatch.setattr(records, 'rows_of_test', broken)
    with pytest.raises(LoggingError):
        ingestion.make_formatter('s')(perf_record(), {}, set())


def test_token_failure_is_a_logging_error(monkeypatch):
    class NoCredential:
        def get_token(self, *scopes):
            raise RuntimeError('no identity here')
    monkeypatch.setattr(ingestion, '_credential', NoCredential())
    with pytest.raises(LoggingError, match='no Azure token'):
        ingestion.bearer_header()


def test_no_azure_handler_without_settings(monkeypatch):
    monkeypatch.delenv('DATA_COLLECTION_ENDPOINT', raising=False)
    monkeypatch.delenv('LOGS_DCR_RULE_ID', raising=False)
    assert ingestion.handler_config('s') is None


def test_ingestion_url_follows_the_api(monkeypatch):
    monkeypatch.setenv('DATA_COLLECTION_ENDPOINT',
                       'https://dce-x.eastus-1.ingest.monitor.azure.com/')
    monkeypatch.setenv('LOGS_DCR_RULE_ID', 'dcr-' + 'ab12' * 8)
    monkeypatch.delenv('LOGS_DCR_STREAM_NAME', raising=False)
    config = ingestion.handler_config('s')
    assert config['type'] == 'clusterproof_httpjson'
    assert config['url'] == (
        'https://dce-x.eastus-1.ingest.monitor.azure.com/dataCollectionRules/'
        'dcr-ab12ab12ab12ab12ab12ab12ab12ab12/streams/'
        'Custom-ReFrameResults_CL?api-version=2023-01-01')
    assert config['authorization_header'] is ingestion.bearer_header


def test_a_published_value_without_thresholds_is_informational():
    row = records.row_from_log_record(perf_record(
        check_perf_ref=6600000, check_perf_lower_thres=None,
        check_perf_upper_thres=None, check_perf_result='pass'), 's')
    assert row['check_perf_result'] == 'informational'


def test_a_failed_verdict_is_kept():
    row = records.row_from_log_record(perf_record(
        check_perf_ref=665500, check_perf_lower_thres=0.0,
        check_perf_upper_thres=None, check_perf_result='fail'), 's')
    assert row['check_perf_result'] == 'fail'


def test_a_per_device_variable_becomes_metric_device_and_peak():
    class FakeCheck(StandInTest):
        perfvalues = {
            'sandbox:ndv5:bw_avg_mlx5_ib0': (390.1, 0, None, None, 'Gb/s', 'pass'),
            'sandbox:ndv5:bw_avg_mlx5_ib1': (120.5, 0, None, None, 'Gb/s', 'pass'),
        }
        metric_devices = {'bw_avg_mlx5_ib0': 'mlx5_ib0',
                          'bw_avg_mlx5_ib1': 'mlx5_ib1'}
        metric_peaks = {'bw_avg': 400.0}
        peak_sources = {'bw_avg': 'NDR line rate'}
        metric_reference_keys = {
            f'bw_avg_mlx5_ib{i}': f'bw_avg|ND96isr_H100_v5|qps=1|1n|-'
            for i in (0, 1)}

    record = perf_record(check_perf_var='bw_avg_mlx5_ib1',
                         check_perf_value=120.5, check_perf_unit='Gb/s')
    record.__dict__['__rfm_check__'] = FakeCheck()
    rows = records.rows_of_test(record, 's')
    assert {(r['check_perf_var'], r['device'], r['check_perf_value'])
            for r in rows} == {('bw_avg', 'mlx5_ib0', 390.1),
                               ('bw_avg', 'mlx5_ib1', 120.5)}
    assert all(r['check_perf_peak'] == 400.0 for r in rows)
    assert all(r['peak_source'] == 'NDR line rate' for r in rows)
    # the key the check looked the reference up with, on every row
    assert {r['reference_key'] for r in rows} == {
        'bw_avg|ND96isr_H100_v5|qps=1|1n|-'}
    # the row of the record's own variable is the one sent for it
    row = records.row_from_log_record(record, 's')
    assert (row['device'], row['check_perf_value']) == ('mlx5_ib1', 120.5)


def test_a_per_gpu_variable_carries_the_gpus_index_bus_id_and_serial():
    """The row schema's GPU columns (data_version 2.1): a perf variable
    named in metric_gpus, and a health row with its GPU, say which GPU."""
    class FakeCheck(StandInTest):
        perfvalues = {
            'sandbox:ndv5:links_up_gpu4': (17, 18, -0.0, None, 'links',
                                           'fail'),
            'sandbox:ndv5:links_up_gpu5': (18, 18, -0.0, None, 'links',
                                           'pass'),
        }
        metric_devices = {'links_up_gpu4': 'gpu4', 'links_up_gpu5': 'gpu5'}
        metric_gpus = {
            'links_up_gpu4': {'index': 4, 'bus_id': '00000005:00:00.0',
                              'serial': '1654922009876'},
            'links_up_gpu5': {'index': 5, 'bus_id': '00000006:00:00.0'}}
        health_rows = [{'node': 'nd-1', 'device': 'gpu4', 'metric': 'health',
                        'value': 1, 'unit': 'findings', 'result': 'fail',
                        'reference': 0, 'reason': 'GPU 4 NVLink 3 inactive',
                        'gpu': {'index': 4, 'bus_id': '00000005:00:00.0',
                                'serial': '1654922009876'}}]

    record = perf_record(check_perf_var='links_up_gpu4',
                         check_perf_value=17, check_perf_unit='links')
    record.__dict__['__rfm_check__'] = FakeCheck()
    rows = records.rows_of_test(record, 's')
    found = {(r['facility'], r['check_perf_var'], r['device'],
              r['gpu_index'], r['gpu_bus_id'], r['gpu_serial'])
             for r in rows}
    assert found == {
        ('reframe', 'links_up', 'gpu4', 4, '00000005:00:00.0',
         '1654922009876'),
        ('reframe', 'links_up', 'gpu5', 5, '00000006:00:00.0', None),
        (row_schema.HEALTH_FACILITY, 'health', 'gpu4', 4, '00000005:00:00.0',
         '1654922009876')}
    assert {r['data_version'] for r in rows} == {row_schema.DATA_VERSION}


def test_a_row_about_no_gpu_has_empty_gpu_columns():
    row = records.row_from_log_record(perf_record(), 's')
    assert (row['gpu_index'], row['gpu_bus_id'], row['gpu_serial']) == \
        (None, None, None)
