"""A log record as ReFrame hands one to the results handler."""
import dataclasses
import logging

from checks.common import measurements


def perf_record(**overrides):
    attrs = {
        'check_name': 'IorCheck', 'check_display_name': 'IorCheck',
        'check_system': 'azure', 'check_partition': 'hbv4',
        'check_environ': 'hpcx', 'check_jobid': '4242',
        'check_job_completion_time': '2026-11-30T10:00:00+00:00',
        'check_perf_var': 'write_bandwidth_mib', 'check_perf_value': 512.5,
        'check_perf_unit': 'MiB/s', 'check_perf_ref': 500,
        'check_perf_lower_thres': -0.05, 'check_perf_upper_thres': 0.1,
        'check_perf_result': 'pass', 'check_result': 'pass',
        'check_job_nodelist': ['hbv4-1', 'hbv4-2'],
        'check_tags': {'storage', 'daily'}, 'check_num_tasks': 2,
        'hostname': 'login-1', 'osuser': 'alice', 'version': '4.10.4',
    }
    attrs.update(overrides)
    record = logging.LogRecord('reframe', logging.INFO, __file__, 1, 'msg',
                               None, None)
    record.__dict__.update(attrs)
    return record


class StandInTest:
    """What a test gives the row path: it lists its measurements as every
    check does (checks/common/measurements.py), from the facts set on it
    under the names the checks' plugins use."""

    class param_space:
        params = {}

    def measurements(self, logged=None):
        return measurements.of_test(facts_of(self), logged)


def facts_of(test) -> measurements.TestFacts:
    found = {item.name: getattr(test, item.name)
             for item in dataclasses.fields(measurements.TestFacts)
             if hasattr(test, item.name)}
    partition = getattr(test, 'current_partition', None)
    verdicts = getattr(test, 'site_baseline_verdicts', None)
    return measurements.TestFacts(**{
        **found, 'vm_sku': partition.extras.get('vm_sku') if partition
        else None,
        'check_params': measurements.recorded_params(test),
        'group_outcomes': {**getattr(test, 'groups_not_measured', {}),
                           **getattr(test, 'group_failures', {})},
        'reference_of': lambda var: test.reference_of(partition.fullname,
                                                      var),
        'baseline_verdicts': verdicts() if verdicts else {}})
