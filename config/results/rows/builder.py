"""A check's measurements -> its rows of the results table (schema.py says
what a row holds).

The builder takes the list a check made of what it measured
(checks/common/measurements.py: one Measurement per metric, device and node
or node group) and the columns ReFrame logged of the run (check_name,
check_jobid, check_result, ...); it reads nothing of the test, imports no
ReFrame, and asks judge.py for every row's verdict.
"""
from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping

from .. import settings
from . import judge
from .schema import (DATA_VERSION, HEALTH_FACILITY, column_names, make_row,
                     now_iso)


def cluster_name(system: str | None) -> str | None:
    return settings.cluster(system)


GPU_COLUMNS = {'index': 'gpu_index', 'bus_id': 'gpu_bus_id',
               'serial': 'gpu_serial'}


def gpu_columns(gpu: dict | None) -> dict:
    """{'index': 5, 'bus_id': '00000009:00:00.0', 'serial': '1654...'} ->
    the row's gpu_index, gpu_bus_id and gpu_serial (None where unknown)."""
    gpu = gpu or {}
    return {column: gpu.get(key) for key, column in GPU_COLUMNS.items()}


def fields_of(measurement) -> dict:
    """A Measurement's fields by name (or a mapping of them, as a perf
    record without a test gives)."""
    if isinstance(measurement, Mapping):
        return dict(measurement)
    return {item.name: getattr(measurement, item.name)
            for item in dataclasses.fields(measurement)}


def _check_params(measured: dict) -> dict:
    """The test's parameters, and why the value has no verdict."""
    params = dict(measured.get('params') or {})
    if measured.get('no_verdict_reasons'):
        params['no_verdict_reasons'] = list(measured['no_verdict_reasons'])
    if measured.get('reference_differences'):
        params['reference_differences'] = measured['reference_differences']
    return params


def row(run: Mapping, measurement, session_id: str) -> dict:
    """One measurement's row: the run's columns as ReFrame logged them, the
    measurement's own, and the judge's verdict."""
    measured = fields_of(measurement)
    values = {key: run.get(key) for key in column_names()}
    values.update({
        'check_perf_var': measured.get('metric'),
        'check_perf_value': measured.get('value'),
        'check_perf_unit': measured.get('unit'),
        'device': measured.get('device'),
        **gpu_columns(measured.get('gpu')),
        'check_perf_peak': measured.get('peak'),
        'peak_source': measured.get('peak_source'),
        'TimeGenerated': now_iso(),
        'record_id': str(uuid.uuid4()),
        'session_id': session_id,
        'facility': ('reframe' if measured.get('sample') is None
                     else HEALTH_FACILITY),
        'data_version': DATA_VERSION,
        'cluster': cluster_name(run.get('check_system')),
        'check_job_completion_time':
            run.get('check_job_completion_time') or None,
        'check_job_nodelist': list(measured.get('nodes') or
                                   run.get('check_job_nodelist') or []),
        'check_tags': run.get('check_tags') or [],
        'vm_sku': measured.get('vm_sku'),
        'vm_sku_observed': measured.get('vm_sku_observed'),
        'nvlink_domain': measured.get('nvlink_domain'),
        'check_params': _check_params(measured),
        'reference_key': measured.get('reference_key'),
        'reframe_version': run.get('version'),
    })
    if measured.get('outcome'):
        values['check_result'], values['check_fail_reason'] = \
            measured['outcome']
    if measured.get('num_tasks'):
        values['check_num_tasks'] = measured['num_tasks']   # a batch step's
    values.update(measured.get('fingerprint') or {})
    values.update(judge.measured_verdict(measured, values['check_fail_reason'],
                                         values['check_job_nodelist']))
    return make_row(values)


def rows(run: Mapping, measurements: Iterable,
         session_id: str) -> list[dict]:
    """The rows of a test's measurements, in their order; a batch job's
    say each node's (or pair's) own outcome."""
    measurements = list(measurements)
    made = [row(run, measurement, session_id)
            for measurement in measurements]
    if any(fields_of(m).get('in_batch') for m in measurements):
        _group_results(made)
    return made


def _group_results(made: list[dict]) -> None:
    """A batch case's rows say each node's own outcome (check_result and
    check_fail_reason), as its one-node (or one-pair) case would: a node
    with a failing value fails with the case's reason, a node without one
    passes."""
    by_node: dict[tuple, list[dict]] = {}
    for made_row in made:
        nodes = made_row.get('check_job_nodelist') or []
        if nodes:
            by_node.setdefault(tuple(nodes), []).append(made_row)
    for node_rows in by_node.values():
        perf = [r for r in node_rows if r['facility'] == 'reframe']
        failed = any(r['check_perf_result'] == 'fail' or (
            r['check_result'] == 'fail' and r['check_perf_value'] is None)
            for r in perf)
        for made_row in node_rows:
            made_row['check_result'] = 'fail' if failed else 'pass'
            if not failed and made_row['facility'] == 'reframe':
                made_row['check_fail_reason'] = None
