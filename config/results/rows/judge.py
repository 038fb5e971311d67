"""The one judge of a row: what verdict a measured value gets, on what
basis, and why. The row builder (builder.py) asks it for every row it
makes (:func:`measured_verdict`), the performance stage for every value
(checks/common/site_baseline_verdicts.py), and acceptance
(scripts/acceptance/verdicts.py) reads a case's values through
:func:`perf_result`.

In this order (a later step sees what the earlier ones decided):

1. The published reference, as ReFrame's performance stage evaluated it
   against the thresholds the check set (checks/common/sku_references.py):
   'pass' or 'fail', basis ``published``. A value without one has no
   result (sanity failed: nothing measured). Rows made without ReFrame
   (`clusterproof ingest`) get that result from :func:`stage_result`.
2. A reference without thresholds is shown, not judged: 'informational'.
   The check drops the thresholds where a reason says so (a smoke size,
   another method than the reference's, a node of another VM size, another
   file system: the row's ``check_params.no_verdict_reasons``; how the
   reference was measured otherwise: ``reference_differences``). No
   reference at all: 'no_reference', and ReFrame's placeholder 0 is null.
3. The site baseline (checks/common/site_baseline.py), beside the published
   reference: a published failure stays published (its reason names the
   baseline's too); a baseline failure fails a published pass; what the
   published reference does not judge the baseline judges, and the row then
   carries the baseline as what it was judged against. Basis
   ``site_baseline``.
4. A failing row names the health findings of its nodes during the run
   ("...; health: GPU 3 hw thermal slowdown active during the run").
5. A health sample's row (checks/health) takes its own rule's verdict and
   reason.

Peers (scripts/comparison, acceptance) judge later and write rows of their
own that name the judged row's record_id; they never change a row.
"""
from __future__ import annotations


def bounds(ref: float, lower: float | None,
           upper: float | None) -> tuple[float | None, float | None]:
    """ReFrame's relative thresholds (-0.1 = 10 % below *ref*) as the
    values they stand for; None where there is no threshold."""
    return (ref * (1 + lower) if lower is not None else None,
            ref * (1 + upper) if upper is not None else None)


def stage_result(value: float, ref: float, lower: float | None,
                 upper: float | None) -> str:
    """What ReFrame's performance stage says of *value* against *ref* and
    its thresholds: 'fail' outside them."""
    low, high = bounds(ref, lower, upper)
    if (low is not None and value < low) or \
            (high is not None and value > high):
        return 'fail'
    return 'pass'


def perf_result(result, ref, lower, upper) -> str | None:
    """ReFrame says 'pass' for any value without thresholds; say instead
    that nothing is published ('no_reference') or that the published value
    is shown for information only, without a verdict ('informational', also
    what a row made outside ReFrame says where no reference applies)."""
    if result in (None, 'informational') or lower is not None or \
            upper is not None:
        return result
    return 'informational' if ref else 'no_reference'


def _without_reference(attrs: dict, result: str | None) -> bool:
    """A value without a reference, or a failed case's variable without
    one (no result; ReFrame's placeholder reference 0, no thresholds)."""
    if result == 'no_reference':
        return True
    return (result is None and not attrs.get('check_perf_ref')
            and attrs.get('check_perf_lower_thres') is None
            and attrs.get('check_perf_upper_thres') is None)


PUBLISHED, SITE_BASELINE = 'published', 'site_baseline'


def with_site_baseline(values: dict, verdict: dict | None) -> dict:
    """The row judged on both bases, the published reference and the site
    baseline (neither replaces the other): it fails when either fails, and
    ``verdict_basis`` names the basis that failed (published when both did;
    its reason then says both). A metric only the baseline judges carries
    the baseline's value, bounds and source as what it was judged against."""
    published = values.get('check_perf_result')
    if published in ('pass', 'fail'):
        values['verdict_basis'] = PUBLISHED
    if not verdict:
        return values
    # the metric's healthy spread, the least spread peers assume of it
    values['verdict_spread'] = verdict.get('spread')
    reason = values.get('check_fail_reason') or ''
    if verdict['fail'] and verdict['reason'] not in reason:
        values['check_fail_reason'] = '; '.join(
            filter(None, [reason, verdict['reason']]))
    if published == 'fail':
        return values
    if verdict['fail'] or published != 'pass':
        values['check_perf_result'] = 'fail' if verdict['fail'] else 'pass'
        values['verdict_basis'] = SITE_BASELINE
    if values['verdict_basis'] == SITE_BASELINE and published != 'pass':
        values.update({'check_perf_ref': verdict['value'],
                       'check_perf_lower_thres': verdict['lower'],
                       'check_perf_upper_thres': verdict['upper'],
                       'reference_source': verdict['source']})
    return values


def with_health_notes(values: dict, notes: dict) -> dict:
    """A failing value names the health findings of its nodes during the
    run ('...; health: GPU 3 hw thermal slowdown active during the run')."""
    found = [notes[node] for node in values['check_job_nodelist']
             if node in notes]
    said = 'health: ' + '; '.join(found)
    reason = values.get('check_fail_reason') or ''
    if found and values.get('check_perf_result') == 'fail' and \
            said not in reason:
        values['check_fail_reason'] = '; '.join(filter(None, [reason, said]))
    return values




def measured_verdict(measured: dict, reason: str | None = None,
                     nodes: list | None = None) -> dict:
    """The verdict of one measurement (a Measurement's fields by name,
    checks/common/measurements.py), in the order above: the columns this
    module decides (check_perf_result, verdict_basis, check_fail_reason,
    check_perf_ref and its thresholds, reference_source). *reason* is what
    ReFrame said of the test so far; *nodes* where it was measured (default:
    the measurement's). The row builder asks for every row; the
    performance stage (checks/common/site_baseline_verdicts.py) for every
    value, and fails the test where this says 'fail'."""
    values = {'check_perf_result': measured.get('stage_result'),
              'check_perf_ref': measured.get('reference'),
              'check_perf_lower_thres': measured.get('lower'),
              'check_perf_upper_thres': measured.get('upper'),
              'reference_source': measured.get('reference_source'),
              'check_fail_reason': reason, 'verdict_basis': None,
              'check_job_nodelist': list(nodes if nodes is not None
                                         else measured.get('nodes') or [])}
    return judged(values, measured.get('site_baseline'),
                  measured.get('health_notes'), measured.get('sample'))


def judged(values: dict, baseline: dict | None = None,
           notes: dict | None = None, sample: dict | None = None) -> dict:
    """*values* (a row's columns as ReFrame logged them: check_perf_result,
    check_perf_ref and the thresholds, check_fail_reason, check_job_nodelist)
    judged in the order above: *baseline* is the site baseline's verdict of
    the value ({'fail', 'reason', 'value', 'lower', 'upper', 'source'} or
    None), *notes* node -> its health findings, *sample* a health sample's
    own {'result', 'reason'}."""
    result = perf_result(values.get('check_perf_result'),
                         values.get('check_perf_ref'),
                         values.get('check_perf_lower_thres'),
                         values.get('check_perf_upper_thres'))
    if _without_reference(values, result):
        # ReFrame logs 0 for a variable without a reference: none is null
        values['check_perf_ref'] = None
    values['check_perf_result'] = result
    values = with_health_notes(with_site_baseline(values, baseline),
                               notes or {})
    if sample is not None:
        values['check_perf_result'] = sample.get('result')
        values['check_fail_reason'] = sample.get('reason') or None
    return values
