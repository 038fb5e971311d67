"""The row builder takes what a check measured as data (a list of
checks/common/measurements.py's Measurement) and the run's columns as
ReFrame logged them: rows are made here with no ReFrame test at all, and
neither the builder nor the Measurement imports ReFrame."""
import subprocess
import sys

from checks.common.measurements import Measurement
from config.results.rows import builder, schema as row_schema
from tests.support.helpers import REPO

RUN = {'check_name': 'StreamCheck', 'check_display_name': 'StreamCheck',
       'check_system': 'azure', 'check_partition': 'hbv4',
       'check_environ': 'gnu', 'check_jobid': '21', 'check_result': 'pass',
       'check_fail_reason': None, 'check_job_nodelist': ['hb-1', 'hb-2'],
       'check_num_tasks': 2, 'check_tags': {'cpu', 'daily'},
       'version': '4.10.4'}
SOURCE = 'https://example.org/published'
KEY = 'triad_bw|HB176rs_v4|-'


def triad(**fields):
    return Measurement(**{
        'metric': 'triad_bw', 'value': 10500.0, 'unit': 'MB/s',
        'stage_result': 'pass', 'reference': 10728, 'lower': -0.05,
        'upper': None, 'reference_source': SOURCE, 'reference_key': KEY,
        'nodes': ('hb-1',), 'vm_sku': 'Standard_HB176rs_v4', **fields})


def test_a_measurement_is_one_row_of_the_schema():
    [row] = builder.rows(RUN, [triad(peak=11000.0, peak_source='peaks.yaml',
                                     fingerprint={'kernel_version': '6.8'},
                                     params={'threads': 176})], 's-1')
    assert list(row) == row_schema.column_names()
    assert (row['check_perf_var'], row['check_perf_value'],
            row['check_perf_unit'], row['check_perf_ref'],
            row['check_perf_lower_thres']) == ('triad_bw', 10500.0, 'MB/s',
                                                10728.0, -0.05)
    assert (row['check_perf_result'], row['verdict_basis']) == ('pass',
                                                                'published')
    assert (row['reference_source'], row['reference_key']) == (SOURCE, KEY)
    assert (row['check_perf_peak'], row['peak_source']) == (11000.0,
                                                            'peaks.yaml')
    assert row['check_job_nodelist'] == ['hb-1']
    assert row['kernel_version'] == '6.8'
    assert row['check_params'] == {'threads': 176}
    assert (row['check_name'], row['check_jobid'], row['session_id'],
            row['reframe_version']) == ('StreamCheck', '21', 's-1', '4.10.4')


def test_a_reason_for_no_verdict_travels_on_the_row():
    [row] = builder.rows(RUN, [triad(
        lower=None, no_verdict_reasons=('smoke size',),
        reference_differences={'triad_bw': ['ranks 176, not 96']})], 's')
    assert (row['check_perf_result'], row['verdict_basis']) == (
        'informational', None)
    assert row['check_params'] == {
        'no_verdict_reasons': ['smoke size'],
        'reference_differences': {'triad_bw': ['ranks 176, not 96']}}


def test_the_site_baseline_and_health_notes_reach_the_judge():
    baseline = {'fail': True, 'reason': 'site baseline: triad_bw low',
                'value': 10728.0, 'lower': -0.05, 'upper': 0.05,
                'source': 'site baseline 2026-11-01 (30 runs)'}
    [row] = builder.rows(RUN, [triad(site_baseline=baseline, health_notes={
        'hb-1': 'GPU 3 hw thermal slowdown'})], 's')
    assert (row['check_perf_result'], row['verdict_basis'],
            row['check_fail_reason']) == (
        'fail', 'site_baseline',
        'site baseline: triad_bw low; health: GPU 3 hw thermal slowdown')


def test_a_batch_jobs_rows_say_each_nodes_own_outcome():
    rows = builder.rows({**RUN, 'check_result': 'fail',
                         'check_fail_reason': 'failed to meet reference'}, [
        triad(nodes=('hb-1',), in_batch=True, num_tasks=176),
        triad(nodes=('hb-2',), value=9000.0, stage_result='fail',
              in_batch=True, num_tasks=176),
        triad(nodes=('hb-3',), value=None, stage_result=None, in_batch=True,
              outcome=('fail', 'hb-3: its step exited with 1')),
        triad(metric='gpu_temp_max', value=91.0, unit='C', reference=0,
              lower=None, upper=0, nodes=('hb-1',), device='gpu3',
              gpu={'index': 3, 'bus_id': '00000004:00:00.0'}, in_batch=True,
              sample={'result': 'fail', 'reason': 'GPU 3 at 91 C'})], 's')
    found = [(r['facility'], r['check_job_nodelist'], r['check_perf_result'],
              r['check_result'], r['check_fail_reason'], r['check_num_tasks'])
             for r in rows]
    assert found == [
        # hb-1 passed: its node passes, though its health sample failed
        ('reframe', ['hb-1'], 'pass', 'pass', None, 176),
        ('reframe', ['hb-2'], 'fail', 'fail', 'failed to meet reference',
         176),
        ('reframe', ['hb-3'], None, 'fail', 'hb-3: its step exited with 1',
         2),
        (row_schema.HEALTH_FACILITY, ['hb-1'], 'fail', 'pass',
         'GPU 3 at 91 C', 2)]
    assert (rows[3]['device'], rows[3]['gpu_index'],
            rows[3]['gpu_bus_id']) == ('gpu3', 3, '00000004:00:00.0')


def test_a_measurement_without_nodes_is_the_jobs():
    [row] = builder.rows(RUN, [triad(nodes=())], 's')
    assert row['check_job_nodelist'] == ['hb-1', 'hb-2']


def test_neither_the_builder_nor_the_measurement_imports_reframe():
    found = subprocess.run(
        [sys.executable, '-c',
         'import sys; import config.results.rows.builder; '
         'import checks.common.measurements; '
         'print(sorted(m for m in sys.modules if m.split(".")[0] == '
         '"reframe"))'],
        cwd=str(REPO), capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == '[]'
