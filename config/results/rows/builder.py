"""One test's perf records -> its rows of the results table (rows/schema.py
says what a row holds)."""
from __future__ import annotations

import uuid

from .. import settings
from . import judge
from .schema import (DATA_VERSION, HEALTH_FACILITY, column_names, make_row,
                     now_iso)

# A LogRecord attribute holding its row, so every handler sends the same one
ROW_ATTR = '_clusterproof_row'


def cluster_name(system: str | None) -> str | None:
    return settings.cluster(system)


def _check_facts(check) -> dict:
    """What only the test object knows: SKU, parameters, sources."""
    if check is None:
        return {}
    facts = {}
    partition = getattr(check, 'current_partition', None)
    if partition is not None:
        facts['vm_sku'] = partition.extras.get('vm_sku')
    params = {name: getattr(check, name, None)
              for name in type(check).param_space.params}
    for name in getattr(check, 'recorded_variables', []):
        params[name] = getattr(check, name, None)
    if getattr(check, 'no_verdict_reasons', None):
        params['no_verdict_reasons'] = check.no_verdict_reasons
    if getattr(check, 'reference_differences', None):
        params['reference_differences'] = check.reference_differences
    facts['check_params'] = params
    facts['reference_sources'] = getattr(check, 'reference_sources', {})
    facts['metric_reference_keys'] = getattr(check, 'metric_reference_keys',
                                             {})
    facts['metric_devices'] = getattr(check, 'metric_devices', {})
    # the GPU a per-GPU metric was measured on: perf variable -> {'index',
    # 'bus_id', 'serial'} (gpu_columns)
    facts['metric_gpus'] = dict(getattr(check, 'metric_gpus', None) or {})
    # a batch of nodes measured one by one (checks/common/fanned_job.py)
    facts['metric_groups'] = getattr(check, 'metric_groups', {})
    facts['step_ranks'] = getattr(check, 'step_ranks', 0)
    facts['metric_peaks'] = getattr(check, 'metric_peaks', {})
    facts['peak_sources'] = getattr(check, 'peak_sources', {})
    # What the job recorded, not ReFrame's first sacct poll (job_nodes.py)
    facts['job_nodes'] = list(getattr(check, 'job_nodes', None) or [])
    # a pair of a batch in the job's order, as a one-pair job records it
    facts['job_node_order'] = {node: index for index, node
                               in enumerate(facts['job_nodes'])}
    # What the node said it is (checks/common/vm_size.py)
    facts['vm_sku_observed'] = getattr(check, 'vm_sku_observed', None) or None
    # each node's own, and why a node is not its partition's SKU (a batch
    # case's rows are per node: each says its node's)
    facts['node_vm_skus'] = dict(getattr(check, 'node_vm_skus', None) or {})
    facts['vm_sku_mismatches'] = dict(
        getattr(check, 'vm_sku_mismatches', None) or {})
    facts['group_peaks'] = dict(getattr(check, 'group_peaks', None) or {})
    facts['group_peak_sources'] = dict(
        getattr(check, 'group_peak_sources', None) or {})
    # GB200/GB300: checks/gpu/nvlink_fabric.py, NcclMultiNode per domain
    facts['nvlink_domain'] = getattr(check, 'nvlink_domain', None) or None
    # Health around the run (checks/common/health_sampling.py): node ->
    # fingerprint columns ('*': the job's nodes together), and its rows
    facts['fingerprints'] = dict(getattr(check, 'node_fingerprints', None)
                                 or {})
    facts['health_rows'] = list(getattr(check, 'health_rows', None) or [])
    facts['health_notes'] = dict(getattr(check, 'health_notes', None) or {})
    # The site baseline's verdicts (checks/common/site_baseline_judging.py)
    # (an unreadable baseline file fails the test itself, saying which)
    verdicts = getattr(check, 'site_baseline_verdicts', None)
    try:
        facts['baseline_verdicts'] = verdicts() if callable(verdicts) else {}
    except ValueError:
        facts['baseline_verdicts'] = {}
    return facts


GPU_COLUMNS = {'index': 'gpu_index', 'bus_id': 'gpu_bus_id',
               'serial': 'gpu_serial'}


def gpu_columns(gpu: dict | None) -> dict:
    """{'index': 5, 'bus_id': '00000009:00:00.0', 'serial': '1654...'} ->
    the row's gpu_index, gpu_bus_id and gpu_serial (None where unknown)."""
    gpu = gpu or {}
    return {column: gpu.get(key) for key, column in GPU_COLUMNS.items()}


def _fingerprint(facts: dict, nodes: list) -> dict:
    prints = facts.get('fingerprints') or {}
    key = nodes[0] if len(nodes) == 1 else '*'
    return dict(prints.get(key) or prints.get('*') or {})


def _health_rows(attrs: dict, session_id: str, facts: dict) -> dict:
    """The rows of the health samples, keyed like perf variables (metric,
    device, node): each is about one node and one device."""
    rows = {}
    for health in facts.get('health_rows', []):
        judged = health.get('reference') is not None
        values = {**attrs,
                  'check_perf_var': health['metric'],
                  'check_perf_value': health.get('value'),
                  'check_perf_unit': health.get('unit'),
                  'check_perf_ref': health.get('reference'),
                  'check_perf_lower_thres': 0 if judged and
                  health.get('reference') else None,
                  'check_perf_upper_thres': 0 if judged and
                  not health.get('reference') else None}
        node = health.get('node')
        row_facts = {**facts, 'job_nodes': [node] if node else [],
                     'metric_devices': {}, 'metric_gpus': {},
                     'metric_peaks': {},
                     'baseline_verdicts': {},
                     'sample': {'result': health.get('result'),
                                'reason': health.get('reason')},
                     'reference_sources': {health['metric']:
                                           health.get('source') or None},
                     'check_params': {**facts.get('check_params', {}),
                                      'health': health.get('params') or {}}}
        row = _row_values(values, session_id, row_facts)
        row['facility'] = HEALTH_FACILITY
        row['device'] = health.get('device')
        row.update(gpu_columns(health.get('gpu')))
        rows[f"{health['metric']}@{health.get('device')}@{node}"] = row
    return rows


def split_device(var: str | None, devices: dict) -> tuple[str | None, str | None]:
    """('bw_avg_mlx5_ib0', {'bw_avg_mlx5_ib0': 'mlx5_ib0'}) ->
    ('bw_avg', 'mlx5_ib0'): one row is one metric on one device."""
    device = devices.get(var) if var else None
    if not device:
        return var, None
    suffix = f'_{device}'
    metric = var[:-len(suffix)] if var.endswith(suffix) else var
    return metric, device


def split_group(var: str | None, groups: dict) -> tuple[str | None,
                                                      str | None]:
    """('triad_bw@hb-3', {'triad_bw@hb-3': 'hb-3'}) -> ('triad_bw', 'hb-3'):
    a batch case's row is one metric on one group, like a one-node case's;
    a batch of pairs names its pair 'hb-3+hb-4' (checks/common/fan_out.py),
    whose row's nodes are the pair's, like a one-pair case's."""
    group = groups.get(var) if var else None
    suffix = f'@{group}'
    if not group or not var.endswith(suffix):
        return var, None
    return var[:-len(suffix)], group


def _group_nodes(label: str, facts: dict) -> list[str]:
    """'hb-4+hb-1' -> ['hb-1', 'hb-4'] where the job recorded hb-1 first."""
    order = facts.get('job_node_order') or {}
    return sorted(label.split('+'), key=lambda node: order.get(node, 0))


def _group_facts(facts: dict, label: str | None) -> dict:
    """The facts of one node or pair of a batch case, as its own case's:
    its node's VM size, that size's peaks, and why its results are
    informational where its node is another SKU (checks/common/vm_size.py,
    fanned_job.py)."""
    if not label or not facts.get('metric_groups'):
        return facts
    nodes = _group_nodes(label, facts)
    sizes = facts.get('node_vm_skus') or {}
    found = {**facts}
    if sizes:
        found['vm_sku_observed'] = sizes.get(nodes[0])
    odd = [facts['vm_sku_mismatches'][node] for node in nodes
           if node in (facts.get('vm_sku_mismatches') or {})]
    if odd:
        params = facts.get('check_params', {})
        found['check_params'] = {**params, 'no_verdict_reasons': [
            *params.get('no_verdict_reasons', []), *odd]}
    if label in (facts.get('group_peaks') or {}):
        found['metric_peaks'] = facts['group_peaks'][label]
        found['peak_sources'] = facts['group_peak_sources'].get(label, {})
    return found


def _row_values(attrs: dict, session_id: str, facts: dict) -> dict:
    var = attrs.get('check_perf_var')
    plain, group = split_group(var, facts.get('metric_groups', {}))
    metric, device = split_device(plain, facts.get('metric_devices', {}))
    facts = _group_facts(facts, group)
    values = {key: attrs.get(key) for key in column_names()}
    values.update({
        'check_perf_var': metric,
        'device': device,
        **gpu_columns(facts.get('metric_gpus', {}).get(plain)),
        'check_perf_peak': facts.get('metric_peaks', {}).get(metric),
        'peak_source': facts.get('peak_sources', {}).get(metric),
        'TimeGenerated': now_iso(),
        'record_id': str(uuid.uuid4()),
        'session_id': session_id,
        'facility': 'reframe',
        'data_version': DATA_VERSION,
        'cluster': cluster_name(attrs.get('check_system')),
        'check_job_completion_time':
            attrs.get('check_job_completion_time') or None,
        'check_job_nodelist': (_group_nodes(group, facts) if group
                               else facts.get('job_nodes')
                               or attrs.get('check_job_nodelist') or []),
        'check_tags': attrs.get('check_tags') or [],
        'vm_sku': facts.get('vm_sku'),
        'vm_sku_observed': facts.get('vm_sku_observed'),
        'nvlink_domain': facts.get('nvlink_domain'),
        'check_params': facts.get('check_params', {}),
        'reference_source': facts.get('reference_sources', {}).get(var),
        'reference_key': facts.get('metric_reference_keys', {}).get(var),
        'reframe_version': attrs.get('version'),
    })
    if group and facts.get('step_ranks'):
        values['check_num_tasks'] = facts['step_ranks']  # as a one-node job
    values.update(_fingerprint(facts, values['check_job_nodelist']))
    return make_row(judge.judged(
        values, facts.get('baseline_verdicts', {}).get(var),
        facts.get('health_notes'), facts.get('sample')))


def _sibling_attrs(attrs: dict, perfvalues: dict) -> dict:
    """The record attributes of every perf variable of the same test."""
    siblings = {}
    for var, info in perfvalues.items():
        value, ref, lower, upper, unit, result = info
        name = var.split(':')[-1]
        siblings[name] = {**attrs,
                          'check_perf_var': name,
                          'check_perf_value': value,
                          'check_perf_ref': ref,
                          'check_perf_lower_thres': lower,
                          'check_perf_upper_thres': upper,
                          'check_perf_unit': unit,
                          'check_perf_result': result}
    return siblings


def rows_of_test(record, session_id: str) -> list[dict]:
    """Rows for every perf variable of the record's test, made once."""
    return list(_rows_by_var(record, session_id).values())


def _rows_by_var(record, session_id: str) -> dict[str, dict]:
    """Perf variable (as ReFrame names it) -> its row, for every perf
    variable of the record's test (and its health rows), made once.

    With perflog_multiline ReFrame logs one record per variable and stops at
    the first handler error, losing the rest; building all rows from the
    first record lets the store keep them whatever a later handler does.
    """
    attrs = record.__dict__
    check = attrs.get('__rfm_check__')
    perfvalues = getattr(check, 'perfvalues', None) or {}
    var = attrs.get('check_perf_var')
    # a batch case where no group passed still has a row per group and
    # metric
    unmeasured = _unmeasured_group_attrs(attrs, check) if check is not None \
        else {}
    if check is None or ((var is None or not perfvalues) and not unmeasured):
        cached = attrs.get(ROW_ATTR)
        if cached is None:
            cached = _row_values(attrs, session_id, _check_facts(check))
            attrs[ROW_ATTR] = cached
        return {var: cached}
    cache = check.__dict__.setdefault(ROW_ATTR, {})
    key = attrs.get('check_jobid')
    if key not in cache:
        facts = _check_facts(check)
        siblings = _sibling_attrs(attrs, perfvalues)
        facts['metric_groups'] = {**facts['metric_groups'],
                                  **{var: group for var, (group, _) in
                                     unmeasured.items()}}
        siblings.update({var: sibling for var, (_, sibling) in
                         unmeasured.items()})
        cache[key] = {name: _row_values(sibling, session_id, facts)
                      for name, sibling in siblings.items()}
        cache[key].update(_health_rows(attrs, session_id, facts))
        if facts['metric_groups']:
            _group_results(cache[key])
    return cache[key]


def _group_outcomes(check) -> dict[str, str]:
    """group -> why it measured nothing or failed sanity, for the nodes or
    pairs of a batch case (checks/common/fanned_job.py) that gave no values."""
    return {**(getattr(check, 'groups_not_measured', None) or {}),
            **(getattr(check, 'group_failures', None) or {})}


def _unmeasured_group_attrs(attrs: dict, check) -> dict[str, tuple]:
    """perf variable -> (group, its record attributes) for every metric of
    every batch group without a value: a row with no value, the reference
    and the group's own failure, as its one-node (one-pair) case logs."""
    outcomes = _group_outcomes(check)
    if not outcomes:
        return {}
    metrics = dict(getattr(check, 'node_metrics', None)
                   or getattr(check, 'perf_metrics', None) or {})
    target = check.current_partition.fullname
    found = {}
    for group, reason in outcomes.items():
        for name, unit in metrics.items():
            var = f'{name}@{group}'
            ref = check.reference_of(target, var) or \
                check.reference_of(target, name) or (None, None, None)
            found[var] = (group, {
                **attrs, 'check_perf_var': var, 'check_perf_value': None,
                'check_perf_ref': ref[0], 'check_perf_lower_thres': ref[1],
                'check_perf_upper_thres': ref[2], 'check_perf_unit': unit,
                'check_perf_result': None, 'check_result': 'fail',
                'check_fail_reason': reason})
    return found


def _group_results(rows: dict[str, dict]) -> None:
    """A batch case's rows say each node's own outcome (check_result and
    check_fail_reason), as its one-node (or one-pair) case would: a node
    with a failing value fails with the case's reason, a node without one
    passes."""
    by_node: dict[tuple, list[dict]] = {}
    for row in rows.values():
        nodes = row.get('check_job_nodelist') or []
        if nodes:
            by_node.setdefault(tuple(nodes), []).append(row)
    for node_rows in by_node.values():
        perf = [r for r in node_rows if r['facility'] == 'reframe']
        failed = any(r['check_perf_result'] == 'fail' or (
            r['check_result'] == 'fail' and r['check_perf_value'] is None)
            for r in perf)
        for row in node_rows:
            row['check_result'] = 'fail' if failed else 'pass'
            if not failed and row['facility'] == 'reframe':
                row['check_fail_reason'] = None


def row_from_log_record(record, session_id: str) -> dict:
    """The row of one ReFrame perflog record (perflog_multiline)."""
    var = record.__dict__.get('check_perf_var')
    rows = _rows_by_var(record, session_id)
    return rows.get(var) or next(iter(rows.values()))


def is_dry_run(record) -> bool:
    check = record.__dict__.get('__rfm_check__')
    if check is not None and hasattr(check, 'is_dry_run'):
        return bool(check.is_dry_run())
    return (record.__dict__.get('check_jobid') is None and
            record.__dict__.get('check_perf_value') is None)
