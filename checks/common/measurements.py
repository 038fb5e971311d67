"""What a check measured, as data: one :class:`Measurement` per metric and
device of one node or node group, with what it is compared with and why it
has no verdict where it has none.

A test lists them (``measurements()``: :func:`of_test` of its
:class:`TestFacts`); the row builder (config/results/rows/) makes one row
of each. No ReFrame import."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace


@dataclass(frozen=True)
class Measurement:
    """One value: a metric on one device of one node or node group.
    ``stage_result`` is ReFrame's performance stage's ('pass', 'fail'
    against ``lower`` and ``upper``; None without a value)."""
    metric: str | None
    value: float | None
    unit: str | None
    stage_result: str | None = None
    # what it is compared with, and where that comes from
    reference: float | None = None
    lower: float | None = None
    upper: float | None = None
    reference_source: str | None = None
    reference_key: str | None = None
    peak: float | None = None
    peak_source: str | None = None
    # where it was measured
    device: str | None = None
    gpu: dict | None = None             # {'index', 'bus_id', 'serial'}
    nodes: tuple[str, ...] = ()         # empty: the job's nodes as logged
    vm_sku: str | None = None           # the partition's
    vm_sku_observed: str | None = None  # what the node said it is
    nvlink_domain: str | None = None
    num_tasks: int | None = None        # a batch step's ranks
    fingerprint: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    # why it has no verdict; how the reference was measured otherwise
    no_verdict_reasons: tuple[str, ...] = ()
    reference_differences: dict = field(default_factory=dict)
    # the site baseline's {'fail', 'reason', 'value', 'lower', 'upper',
    # 'source'}; None where it has no entry
    site_baseline: dict | None = None
    health_notes: dict = field(default_factory=dict)   # node -> findings
    # (check_result, reason) of its batch node or pair that measured nothing
    outcome: tuple[str, str | None] | None = None
    # a batch job's node or pair: its rows say the group's own outcome
    in_batch: bool = False
    # a health sample's row: the sample's own {'result', 'reason'}
    sample: dict | None = None


def split_device(var: str | None, devices: dict) -> tuple[str | None,
                                                       str | None]:
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
    a batch case's value is one metric on one group, like a one-node case's;
    a batch of pairs names its pair 'hb-3+hb-4' (fan_out.py), whose nodes
    are the pair's, like a one-pair case's."""
    group = groups.get(var) if var else None
    suffix = f'@{group}'
    if not group or not var.endswith(suffix):
        return var, None
    return var[:-len(suffix)], group


@dataclass
class TestFacts:
    """What a test's plugins recorded, that its measurements carry: each
    test fills it from its own declared state (BenchmarkTest.test_facts,
    JobScript.node_facts); nothing here reads the test."""
    perfvalues: dict = field(default_factory=dict)   # ReFrame's
    vm_sku: str | None = None
    check_params: dict = field(default_factory=dict)
    no_verdict_reasons: tuple = ()
    reference_differences: dict = field(default_factory=dict)
    reference_sources: dict = field(default_factory=dict)
    metric_reference_keys: dict = field(default_factory=dict)
    metric_devices: dict = field(default_factory=dict)
    metric_gpus: dict = field(default_factory=dict)
    metric_peaks: dict = field(default_factory=dict)
    peak_sources: dict = field(default_factory=dict)
    # a batch job's (fan_out_results.py); reference_of(var): a var's reference
    metric_groups: dict = field(default_factory=dict)
    group_peaks: dict = field(default_factory=dict)
    group_peak_sources: dict = field(default_factory=dict)
    step_ranks: int = 0
    group_outcomes: dict = field(default_factory=dict)
    node_metrics: dict = field(default_factory=dict)
    reference_of: object = None
    job_nodes: tuple = ()               # the node probe's (node_probe.py)
    vm_sku_observed: str | None = None
    node_vm_skus: dict = field(default_factory=dict)
    vm_sku_mismatches: dict = field(default_factory=dict)
    node_fingerprints: dict = field(default_factory=dict)
    health_rows: list = field(default_factory=list)
    health_notes: dict = field(default_factory=dict)
    nvlink_domain: str | None = None
    baseline_verdicts: dict = field(default_factory=dict)


def recorded_params(test, names=()) -> dict:
    """The test's parameters and the variables it names to record."""
    return {name: getattr(test, name, None)
            for name in [*type(test).param_space.params, *names]}


def of_test(test: TestFacts, logged: dict | None = None
            ) -> dict[str, Measurement]:
    """ReFrame's perf variable name -> its Measurement, for every value of
    a test (a batch job's nodes or pairs without a value included), and its
    health samples' rows. *logged*: ReFrame's perf record of the test
    (check_perf_var and its columns), where a test that evaluated no value
    lists that record's variable alone; None in the performance stage."""
    facts = {item.name: getattr(test, item.name) for item in fields(test)}
    facts.update(job_nodes=tuple(test.job_nodes),
                 no_verdict_reasons=tuple(test.no_verdict_reasons))
    values = {var.split(':')[-1]: (tuple(info), None)
              for var, info in test.perfvalues.items()}
    unmeasured = _unmeasured_groups(test)
    var = (logged or {}).get('check_perf_var')
    logged_nodes = tuple((logged or {}).get('check_job_nodelist') or ())
    if logged is not None and (var is None or not values) and \
            not unmeasured:
        own = tuple(logged.get(f'check_perf_{name}') for name in (
            'value', 'ref', 'lower_thres', 'upper_thres', 'unit', 'result'))
        return {var: replace(_measurement(facts, var, own, None,
                                          logged_nodes), in_batch=False)}
    facts['metric_groups'] = {**facts['metric_groups'],
                              **{var: group for var, (group, _, _)
                                 in unmeasured.items()}}
    values.update({var: (own, outcome) for var, (_, own, outcome)
                   in unmeasured.items()})
    found = {var: _measurement(facts, var, own, outcome, logged_nodes)
             for var, (own, outcome) in values.items()}
    found.update(_health_samples(facts, (logged or {}).get(
        'check_perf_result'), logged_nodes))
    return found


def _unmeasured_groups(test: TestFacts) -> dict[str, tuple]:
    """perf variable -> (group, its values, (check_result, reason)) for
    every metric of every batch group that gave no value, as its one-node
    case logs."""
    found = {}
    for group, reason in test.group_outcomes.items():
        for name, unit in test.node_metrics.items():
            var = f'{name}@{group}'
            ref = test.reference_of(var) or test.reference_of(name) or \
                (None, None, None)
            found[var] = (group, (None, ref[0], ref[1], ref[2], unit, None),
                          ('fail', reason))
    return found


def _group_nodes(label: str, facts: dict) -> tuple[str, ...]:
    """'hb-4+hb-1' -> ('hb-1', 'hb-4') where the job recorded hb-1 first."""
    order = {node: index for index, node in enumerate(facts['job_nodes'])}
    return tuple(sorted(label.split('+'), key=lambda n: order.get(n, 0)))


def _fingerprint(facts: dict, nodes: tuple) -> dict:
    prints = facts['node_fingerprints']
    key = nodes[0] if len(nodes) == 1 else '*'
    return dict(prints.get(key) or prints.get('*') or {})


def _measurement(facts, var, own, outcome, logged_nodes) -> Measurement:
    """One perf variable's value (value, reference, lower, upper, unit,
    ReFrame's result) as a Measurement; a batch group's as its own case's:
    its node's VM size, that size's peaks, its node's SKU mismatch."""
    value, ref, lower, upper, unit, result = own
    plain, group = split_group(var, facts['metric_groups'])
    metric, device = split_device(plain, facts['metric_devices'])
    nodes = (_group_nodes(group, facts) if group else facts['job_nodes']
             or logged_nodes)
    observed, peaks, peak_sources = (facts['vm_sku_observed'],
                                     facts['metric_peaks'],
                                     facts['peak_sources'])
    reasons = facts['no_verdict_reasons']
    if group:
        sizes = facts['node_vm_skus']
        observed = sizes.get(nodes[0]) if sizes else observed
        reasons += tuple(facts['vm_sku_mismatches'][node] for node in nodes
                         if node in facts['vm_sku_mismatches'])
        if group in facts['group_peaks']:
            peaks = facts['group_peaks'][group]
            peak_sources = facts['group_peak_sources'].get(group, {})
    return Measurement(
        metric=metric, value=value, unit=unit, stage_result=result,
        reference=ref, lower=lower, upper=upper,
        reference_source=facts['reference_sources'].get(var),
        reference_key=facts['metric_reference_keys'].get(var),
        peak=peaks.get(metric), peak_source=peak_sources.get(metric),
        device=device, gpu=facts['metric_gpus'].get(plain), nodes=nodes,
        vm_sku=facts.get('vm_sku'), vm_sku_observed=observed,
        nvlink_domain=facts['nvlink_domain'],
        num_tasks=(facts['step_ranks'] or None) if group else None,
        fingerprint=_fingerprint(facts, nodes),
        params=facts['check_params'], no_verdict_reasons=reasons,
        reference_differences=facts['reference_differences'],
        site_baseline=facts['baseline_verdicts'].get(var),
        health_notes=facts['health_notes'], outcome=outcome,
        in_batch=bool(facts['metric_groups']))


def _health_samples(facts, logged_result, logged_nodes) -> dict:
    """The health samples (health_sampling.py), keyed 'metric@device@node',
    each judged by its own rule."""
    found = {}
    for health in facts['health_rows']:
        metric, reference = health['metric'], health.get('reference')
        node = health.get('node')
        nodes = (node,) if node else logged_nodes
        found[f"{metric}@{health.get('device')}@{node}"] = Measurement(
            metric=metric, value=health.get('value'),
            unit=health.get('unit'), stage_result=logged_result,
            reference=reference,
            lower=0 if reference is not None and reference else None,
            upper=0 if reference is not None and not reference else None,
            reference_source=health.get('source') or None,
            reference_key=facts['metric_reference_keys'].get(metric),
            peak_source=facts['peak_sources'].get(metric),
            device=health.get('device'), gpu=health.get('gpu'), nodes=nodes,
            vm_sku=facts.get('vm_sku'),
            vm_sku_observed=facts['vm_sku_observed'],
            nvlink_domain=facts['nvlink_domain'],
            fingerprint=_fingerprint(facts, nodes),
            params={**facts['check_params'],
                    'health': health.get('params') or {}},
            no_verdict_reasons=facts['no_verdict_reasons'],
            reference_differences=facts['reference_differences'],
            health_notes=facts['health_notes'],
            in_batch=bool(facts['metric_groups']),
            sample={'result': health.get('result'),
                    'reason': health.get('reason')})
    return found
