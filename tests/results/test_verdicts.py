"""Characterisation of every verdict the row path gives today: what ReFrame's
performance stage said (pass, fail, a value shown without thresholds, no
reference, no value), crossed with the site baseline's verdict (none, pass,
fail) and the health notes of the node, and the batch cases' per-node
outcomes. Each case names the row's check_perf_result, verdict_basis,
check_fail_reason and what it was judged against.

The table is the contract: moving the judge may change how a case reaches
the row builder (``judged_row`` below), never the table.
"""
import logging

import pytest

from config.results.handlers import records
from tests.support.perf_records import StandInTest

TARGET = 'azure:hbv4'
NODE = 'hbv4-1'
SOURCE = 'https://example.org/published'
BASELINE_SOURCE = 'site baseline 2026-11-01 (30 runs)'
PUBLISHED_REASON = 'performance error: failed to meet reference: triad_bw'
BASELINE_REASON = ('site baseline: triad_bw 9000 MB/s: 16.1% below the '
                   'site baseline 10728 (lower bound 10200)')
HEALTH_NOTE = 'GPU 3 hw thermal slowdown active during the run'

# What ReFrame's performance stage logs for one perf variable:
# (value, reference, lower, upper, ReFrame's result, check_result, reason)
STAGE = {
    'judged pass': (10500.0, 10728, -0.05, None, 'pass', 'pass', None),
    'judged fail': (9000.0, 10728, -0.05, None, 'fail', 'fail',
                    PUBLISHED_REASON),
    # a reference without thresholds: a smoke size, another method, a
    # node of another VM size, or a published value only shown
    'shown': (10500.0, 10728, None, None, 'pass', 'pass', None),
    # ReFrame's placeholder reference for a variable with none
    'no reference': (10500.0, 0, None, None, 'pass', 'pass', None),
    # sanity failed: no value, no result
    'no value': (None, 0, None, None, None, 'fail',
                 'sanity error: no Triad line'),
    'no value, referenced': (None, 10728, -0.05, None, None, 'fail',
                             'sanity error: no Triad line'),
}


def baseline(fail: bool) -> dict:
    return {'fail': fail, 'reason': BASELINE_REASON if fail else '',
            'value': 10728.0, 'lower': -0.05, 'upper': 0.05,
            'source': BASELINE_SOURCE}


class StandInCheck(StandInTest):
    """What a STREAM test knows of one perf variable."""

    def __init__(self, stage, verdict, notes, reasons, differences):
        value, ref, lower, upper, result, _, _ = STAGE[stage]
        self.perfvalues = {f'{TARGET}:triad_bw':
                           (value, ref, lower, upper, 'MB/s', result)}
        self.reference_sources = {'triad_bw': SOURCE} if ref else {}
        self.metric_reference_keys = {'triad_bw': 'triad_bw|HB176rs_v4|-'}
        self.no_verdict_reasons = list(reasons)
        self.reference_differences = dict(differences)
        self.health_notes = dict(notes)
        self.job_nodes = [NODE]
        self._verdicts = {'triad_bw': verdict} if verdict else {}

    def site_baseline_verdicts(self):
        return self._verdicts


def judged_row(stage, verdict=None, notes=None, reasons=(),
               differences=None) -> dict:
    """The stored row of one STREAM triad value, as the row path makes it."""
    value, ref, lower, upper, result, outcome, reason = STAGE[stage]
    record = logging.LogRecord('reframe', logging.INFO, __file__, 1, 'msg',
                               None, None)
    record.__dict__.update({
        'check_name': 'StreamCheck', 'check_display_name': 'StreamCheck',
        'check_system': 'azure', 'check_partition': 'hbv4',
        'check_environ': 'gnu', 'check_jobid': '17',
        'check_perf_var': 'triad_bw', 'check_perf_value': value,
        'check_perf_unit': 'MB/s', 'check_perf_ref': ref,
        'check_perf_lower_thres': lower, 'check_perf_upper_thres': upper,
        'check_perf_result': result, 'check_result': outcome,
        'check_fail_reason': reason, 'check_job_nodelist': [NODE],
        '__rfm_check__': StandInCheck(stage, verdict, notes or {}, reasons,
                                      differences or {})})
    return records.row_from_log_record(record, 'session-1')


def joined(*parts):
    return '; '.join(parts)


HEALTH = {NODE: HEALTH_NOTE}
PUBLISHED = (10728.0, -0.05, None, SOURCE)
BASELINE = (10728.0, -0.05, 0.05, BASELINE_SOURCE)

# (stage, baseline verdict, health notes) ->
# (check_perf_result, verdict_basis, check_fail_reason,
#  (check_perf_ref, lower, upper, reference_source))
CASES = [
    # published reference alone
    ('judged pass', None, None, ('pass', 'published', None, PUBLISHED)),
    ('judged fail', None, None,
     ('fail', 'published', PUBLISHED_REASON, PUBLISHED)),
    ('shown', None, None, ('informational', None, None,
                           (10728.0, None, None, SOURCE))),
    ('no reference', None, None, ('no_reference', None, None,
                                  (None, None, None, None))),
    ('no value', None, None, (None, None, 'sanity error: no Triad line',
                              (None, None, None, None))),
    ('no value, referenced', None, None,
     (None, None, 'sanity error: no Triad line', PUBLISHED)),
    # both bases: a published pass stays published unless the baseline fails
    ('judged pass', False, None, ('pass', 'published', None, PUBLISHED)),
    ('judged pass', True, None,
     ('fail', 'site_baseline', BASELINE_REASON, PUBLISHED)),
    # a published failure stays published; its reason names the baseline's
    ('judged fail', False, None,
     ('fail', 'published', PUBLISHED_REASON, PUBLISHED)),
    ('judged fail', True, None,
     ('fail', 'published', joined(PUBLISHED_REASON, BASELINE_REASON),
      PUBLISHED)),
    # what the published reference does not judge, the baseline judges,
    # and the row then carries the baseline as its reference
    ('shown', False, None, ('pass', 'site_baseline', None, BASELINE)),
    ('shown', True, None,
     ('fail', 'site_baseline', BASELINE_REASON, BASELINE)),
    ('no reference', False, None, ('pass', 'site_baseline', None, BASELINE)),
    ('no reference', True, None,
     ('fail', 'site_baseline', BASELINE_REASON, BASELINE)),
    # health notes name themselves on failing rows only
    ('judged pass', None, HEALTH, ('pass', 'published', None, PUBLISHED)),
    ('judged fail', None, HEALTH,
     ('fail', 'published', joined(PUBLISHED_REASON, 'health: ' + HEALTH_NOTE),
      PUBLISHED)),
    ('judged pass', True, HEALTH,
     ('fail', 'site_baseline', joined(BASELINE_REASON,
                                      'health: ' + HEALTH_NOTE), PUBLISHED)),
    ('judged fail', True, HEALTH,
     ('fail', 'published', joined(PUBLISHED_REASON, BASELINE_REASON,
                                  'health: ' + HEALTH_NOTE), PUBLISHED)),
    ('shown', True, HEALTH,
     ('fail', 'site_baseline', joined(BASELINE_REASON,
                                      'health: ' + HEALTH_NOTE), BASELINE)),
    ('shown', None, HEALTH, ('informational', None, None,
                             (10728.0, None, None, SOURCE))),
    ('no reference', None, HEALTH, ('no_reference', None, None,
                                    (None, None, None, None))),
    ('no value', None, HEALTH, (None, None, 'sanity error: no Triad line',
                                (None, None, None, None))),
]


def case_id(case):
    stage, verdict, notes, _ = case
    found = {None: 'no baseline', False: 'baseline pass',
             True: 'baseline fail'}[verdict]
    return f"{stage} / {found}{' / health note' if notes else ''}"


@pytest.mark.parametrize('case', CASES, ids=[case_id(c) for c in CASES])
def test_every_basis_and_reason_combination(case):
    stage, failed, notes, expected = case
    verdict = None if failed is None else baseline(failed)
    row = judged_row(stage, verdict, notes)
    result, basis, reason, (ref, lower, upper, source) = expected
    assert (row['check_perf_result'], row['verdict_basis'],
            row['check_fail_reason']) == (result, basis, reason)
    assert (row['check_perf_ref'], row['check_perf_lower_thres'],
            row['check_perf_upper_thres'], row['reference_source']) == (
        ref, lower, upper, source)


# Why a value is shown without a verdict: the reasons travel on the row
# (check_params), the verdict stays 'informational' and the published
# reference stays what it is compared with.
REASONS = [
    ('smoke size', ['smoke size'], None),
    ('VM size mismatch',
     ['hbv4-1 is Standard_HB120rs_v3, partition hbv4 declares '
      'Standard_HB176rs_v4'], None),
    ('another method', ["OpenMP settings differ from the reference's: "
                        'OMP_PROC_BIND=spread, not close'], None),
    ('IOR file system', ['file system ext2/ext3:unknown is not the '
                         "reference's"], None),
    ('reference measured otherwise', [],
     {'triad_bw': ['ranks 176, not 96', 'compiler not stated by the '
                   'source']}),
]


@pytest.mark.parametrize('name,reasons,differences', REASONS,
                         ids=[r[0] for r in REASONS])
def test_a_reason_for_no_verdict_is_shown_not_judged(name, reasons,
                                                     differences):
    row = judged_row('shown', reasons=reasons, differences=differences)
    assert (row['check_perf_result'], row['verdict_basis'],
            row['check_fail_reason']) == ('informational', None, None)
    assert (row['check_perf_ref'], row['reference_source']) == (10728.0,
                                                                SOURCE)
    params = row['check_params']
    assert params.get('no_verdict_reasons') == (reasons or None)
    assert params.get('reference_differences') == differences
    # the site baseline still judges such a value
    judged = judged_row('shown', baseline(True), reasons=reasons,
                        differences=differences)
    assert (judged['check_perf_result'], judged['verdict_basis']) == (
        'fail', 'site_baseline')


class StandInBatch(StandInTest):
    """A STREAM batch case of three nodes (checks/common/fan_out_results.py):
    hb-1 passed on a node of another VM size, hb-2 failed its reference,
    hb-3's step measured nothing."""

    class current_partition:
        fullname = TARGET
        extras = {'vm_sku': 'Standard_HB176rs_v4'}

    def __init__(self):
        self.perfvalues = {
            f'{TARGET}:triad_bw@hb-1': (10500.0, 10728, None, None, 'MB/s',
                                        'pass'),
            f'{TARGET}:triad_bw@hb-2': (9000.0, 10728, -0.05, None, 'MB/s',
                                        'fail')}
        self.metric_groups = {'triad_bw@hb-1': 'hb-1',
                              'triad_bw@hb-2': 'hb-2'}
        self.node_metrics = {'triad_bw': 'MB/s'}
        self.groups_not_measured = {'hb-3': 'hb-3: its step exited with 1'}
        self.group_failures = {}
        self.job_nodes = ['hb-1', 'hb-2', 'hb-3']
        self.node_vm_skus = {'hb-1': 'Standard_HB120rs_v3',
                             'hb-2': 'Standard_HB176rs_v4',
                             'hb-3': 'Standard_HB176rs_v4'}
        self.vm_sku_mismatches = {'hb-1': 'hb-1 is Standard_HB120rs_v3'}
        self.reference_sources = {'triad_bw@hb-2': SOURCE,
                                  'triad_bw@hb-1': SOURCE}
        self.step_ranks = 176
        self.health_rows = [
            {'metric': 'gpu_temp_max', 'value': 91.0, 'unit': 'C',
             'reference': 0, 'node': 'hb-2', 'device': 'gpu3',
             'result': 'fail', 'reason': 'GPU 3 at 91 C', 'source': None},
            {'metric': 'cpu_freq_min', 'value': 2.1, 'unit': 'GHz',
             'reference': None, 'node': 'hb-1', 'device': None,
             'result': 'informational', 'reason': None, 'source': None}]

    def reference_of(self, target, name):
        return (10728, -0.05, None, 'MB/s') if name == 'triad_bw' else None


def test_a_batch_case_judges_each_node_as_its_own_case():
    record = logging.LogRecord('reframe', logging.INFO, __file__, 1, 'msg',
                               None, None)
    record.__dict__.update({
        'check_name': 'StreamCheck', 'check_display_name': 'StreamCheck',
        'check_system': 'azure', 'check_partition': 'hbv4',
        'check_jobid': '18', 'check_perf_var': 'triad_bw@hb-1',
        'check_perf_value': 10500.0, 'check_perf_unit': 'MB/s',
        'check_perf_ref': 10728, 'check_perf_lower_thres': None,
        'check_perf_upper_thres': None, 'check_perf_result': 'pass',
        'check_result': 'fail', 'check_fail_reason': PUBLISHED_REASON,
        '__rfm_check__': StandInBatch()})
    rows = records.rows_of_test(record, 'session-1')
    found = {(r['facility'], r['check_perf_var'],
              tuple(r['check_job_nodelist'])):
             (r['check_perf_result'], r['verdict_basis'], r['check_result'],
              r['check_fail_reason'], r['check_perf_ref'],
              r['check_perf_lower_thres'],
              r['check_params'].get('no_verdict_reasons'))
             for r in rows}
    assert found == {
        # another VM size: shown, not judged, and the node passes
        ('reframe', 'triad_bw', ('hb-1',)):
            ('informational', None, 'pass', None, 10728.0, None,
             ['hb-1 is Standard_HB120rs_v3']),
        # its own failure, with the case's reason
        ('reframe', 'triad_bw', ('hb-2',)):
            ('fail', 'published', 'fail', PUBLISHED_REASON, 10728.0, -0.05,
             None),
        # no value: the group's own reason, its reference kept
        ('reframe', 'triad_bw', ('hb-3',)):
            (None, None, 'fail', 'hb-3: its step exited with 1', 10728.0,
             -0.05, None),
        # a health sample keeps its own verdict and reason; its node's
        # outcome is its node's perf rows'; a judged sample's basis is
        # 'published' (its reference is a sourced limit: 0 throttling)
        ('clusterproof-health', 'gpu_temp_max', ('hb-2',)):
            ('fail', 'published', 'fail', 'GPU 3 at 91 C', 0.0, None, None),
        ('clusterproof-health', 'cpu_freq_min', ('hb-1',)):
            ('informational', None, 'pass', None, None, None, None),
    }
    assert {r['check_num_tasks'] for r in rows
            if r['facility'] == 'reframe'} == {176}
