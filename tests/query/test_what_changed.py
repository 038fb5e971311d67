"""what_changed on the realistic store (tests/support/query_store.py), grown by one
more day: an ND node upgraded to a second GPU driver fails NCCL, and a new
VM on the physical host of the bad HBv4 node fails STREAM again."""
import datetime as dt
import json

import pytest

from config.results.rows import schema as row_schema
from scripts.query.runner import Runner
from tests.support import query_store

GROWN_AT = query_store.NOW - dt.timedelta(hours=2)


def _nccl(node: str, index: int, driver: str, value: float) -> dict:
    failed = value < 480 * 0.95
    return {
        'TimeGenerated': GROWN_AT.isoformat(),
        'check_job_completion_time': (GROWN_AT + dt.timedelta(
            minutes=index)).isoformat(),
        'record_id': f'nccl-grown-{node}', 'session_id': 'grown-westeu',
        'facility': 'reframe', 'data_version': row_schema.DATA_VERSION,
        'cluster': 'prod-westeu', 'check_system': 'azure',
        'check_partition': 'ndv5', 'vm_sku': query_store.ND_SKU,
        'check_name': f'NcclSingleNode_{index}',
        'check_display_name': 'NcclSingleNode %collective=all_reduce',
        'check_perf_var': 'avg_busbw', 'check_perf_value': value,
        'check_perf_unit': 'GB/s', 'check_perf_ref': 480.0,
        'check_perf_lower_thres': -0.05,
        'check_perf_result': 'fail' if failed else 'pass',
        'check_job_nodelist': [node],
        **query_store.fingerprint(node, gpu_driver=driver)}


def _new_vm_on_the_bad_host() -> dict:
    return {
        'TimeGenerated': GROWN_AT.isoformat(),
        'record_id': 'stream-grown-hb-6', 'session_id': 'grown-eastus',
        'facility': 'reframe', 'data_version': row_schema.DATA_VERSION,
        'cluster': 'prod-eastus', 'check_system': 'azure',
        'check_partition': 'hbv4', 'vm_sku': query_store.HB_SKU,
        'check_name': 'StreamCheck_6', 'check_display_name': 'StreamCheck',
        'check_perf_var': 'triad_bw', 'check_perf_value': 555000.0,
        'check_perf_unit': 'MB/s', 'check_perf_ref': 700000.0,
        'check_perf_lower_thres': -0.1, 'check_perf_result': 'fail',
        'check_job_nodelist': ['hb-6'],
        **query_store.fingerprint('hb-3', newer_kernel=True)}


@pytest.fixture(scope='module')
def grown(tmp_path_factory):
    home = tmp_path_factory.mktemp('grown')
    query_store.build(home)
    rows = [_nccl('nd-1', 0, query_store.GPU_DRIVER, 481.0),
            _nccl('nd-2', 1, query_store.NEW_GPU_DRIVER, 310.0),
            _nccl('nd-3', 2, query_store.GPU_DRIVER, 482.0),
            _new_vm_on_the_bad_host(),
            {**_nccl('nd-2', 1, query_store.NEW_GPU_DRIVER, 1.0),
             'record_id': 'health-grown-nd-2', 'check_perf_var': 'link_downed',
             'device': 'mlx5_ib3/1', 'check_perf_unit': 'count',
             'check_perf_ref': 0.0, 'check_perf_lower_thres': None,
             'check_perf_upper_thres': 0.0}]
    path = home / 'results' / f'{GROWN_AT:%Y-%m-%d}' / 'grown.jsonl'
    path.write_text(''.join(json.dumps(row_schema.make_row(row)) + '\n'
                            for row in rows))
    return Runner(results_dir=home / 'results', now=query_store.NOW)


def changes(runner):
    return {(r['node'], r['field']): r
            for r in runner.run('what_changed').records()}


def test_the_driver_that_changed_is_named_with_its_fleet_share(grown):
    found = changes(grown)
    driver = found[('nd-2', 'gpu_driver_version')]
    assert (driver['before'], driver['after']) == (query_store.GPU_DRIVER,
                                                   query_store.NEW_GPU_DRIVER)
    assert (driver['nodes_on'], driver['fleet_nodes'],
            driver['fleet_share_pct']) == (1, 3, 33.3)
    # nothing else changed on nd-2; nd-1 and nd-3 still pass
    assert [k for k in found if k[0].startswith('nd-')] == \
        [('nd-2', 'gpu_driver_version')]


def test_a_host_that_fails_again_under_a_new_vm_name_is_visible(grown):
    found = changes(grown)
    host = found[('hb-6', 'physical_host')]
    assert host['after'] == query_store.fingerprint('hb-3')['physical_host']
    assert host['host_failed_before_as'] == 'hb-3'
    # a VM that never passed shows only its host, not every field
    assert [k for k in found if k[0] == 'hb-6'] == [('hb-6', 'physical_host')]
    kernel = found[('hb-3', 'kernel_version')]
    assert (kernel['before'], kernel['after'], kernel['nodes_on'],
            kernel['fleet_nodes']) == (query_store.KERNEL,
                                       query_store.NEW_KERNEL, 2,
                                       len(query_store.HB_NODES) + 1)


def test_error_counters_are_higher_is_worse(grown, tmp_path):
    query = tmp_path / 'better.kql'
    query.write_text("clusterproof_results\n"
                     "| where check_perf_var in ('link_downed', 'avg_busbw')\n"
                     "| summarize by check_perf_var, lower_is_better\n")
    found = {r['check_perf_var']: r['lower_is_better']
             for r in grown.run(str(query)).records()}
    assert found == {'link_downed': True, 'avg_busbw': False}
