"""The site baseline's verdict on each metric of a test, and the
performance stage's verdict: the one judge (config/results/rows/judge.py)
on every value the test measured, failing the test where it says 'fail'.

With ``CLUSTERPROOF_BASELINES`` set, every metric that has a reference key
(sku_references.py) and a baseline entry for its cluster, test class, key
and device is checked against the entry's two-sided bounds, beside the
published reference (both are checked; neither replaces the other). A
metric outside them fails the test case with a reason naming the basis
(``site baseline: triad_bw 10382.9 MB/s: 16.1% below ...``), and its row
says ``fail`` with ``verdict_basis = site_baseline`` (each measurement
carries its baseline verdict: BenchmarkTest.test_facts reads
:meth:`SiteBaselineVerdicts.site_baseline_verdicts`).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys

import reframe as rfm
from reframe.core.exceptions import PerformanceError

from . import site_baseline

JUDGE_FILE = os.path.realpath(os.path.join(
    os.path.dirname(__file__), '..', '..', 'config', 'results', 'rows',
    'judge.py'))
_judges = []


def the_judge():
    """The judge module the row builder asks, found by its file: ReFrame
    loads the configuration (and with it the builder) under a name of its
    own, ``config@<hash>.results.rows.judge``, and the checks under another,
    so an import from here would make a second copy of the one judge."""
    if not _judges:
        found = [module for module in list(sys.modules.values())
                 if (getattr(module, '__file__', None) or '').endswith(
                     'judge.py')
                 and os.path.realpath(module.__file__) == JUDGE_FILE]
        if not found:       # no configuration loaded: load it once
            spec = importlib.util.spec_from_file_location(
                'clusterproof_row_judge', JUDGE_FILE)
            found = [importlib.util.module_from_spec(spec)]
            spec.loader.exec_module(found[0])
        _judges.append(found[0])
    return _judges[0]


class SiteBaselineVerdicts(rfm.RegressionTestPlugin):
    #: [the values judged, their verdicts]: judged once per set of values.
    site_baseline_judged = variable(list, value=[], loggable=False)

    def metric_keys_and_devices(self) -> tuple[dict, dict]:
        """({perf variable: reference key}, {perf variable: device});
        BenchmarkTest answers (sku_references.py fills the keys)."""
        return {}, {}

    def site_baseline_verdicts(self) -> dict[str, dict]:
        """Perf variable -> what the site baseline says of its value:
        {'fail', 'reason', 'value', 'lower', 'upper', 'source'}; only the
        variables that have an entry. Known once the performance stage has
        evaluated the values (failed or not). Judged once per set of
        values: the hook below and the row writer ask for the same."""
        measured = tuple((name, info[0]) for name, info
                         in (self.perfvalues or {}).items())
        judged = self.site_baseline_judged
        if judged and judged[0] == measured:
            return judged[1]
        found = self._judged_against_site_baseline()
        self.site_baseline_judged = [measured, found]
        return found

    def _judged_against_site_baseline(self) -> dict[str, dict]:
        layer = site_baseline.current()
        if not layer.entries:
            return {}
        keys, devices = self.metric_keys_and_devices()
        cluster = site_baseline.cluster_of(self.current_system.name)
        test = self.display_name.split(' ')[0]
        found = {}
        for name, info in (self.perfvalues or {}).items():
            var, value = name.split(':')[-1], info[0]
            if value is None or var not in keys:
                continue
            entry = layer.find(cluster, test, keys[var], devices.get(var))
            if entry is None:
                continue
            # the row carries the entry's source (reference_source)
            why = site_baseline.missed(float(value), entry, source=False)
            unit = f' {entry.unit}' if entry.unit else ''
            found[var] = {
                'fail': bool(why),
                'reason': (f'{site_baseline.LABEL}: {var} {value:g}{unit}: '
                           f'{why}' if why else ''),
                'value': entry.value, 'lower': entry.lower,
                'upper': entry.upper, 'source': entry.source,
                # the healthy spread relative to the value: peers' floor
                # (scripts/judging/peers.py, row column verdict_spread)
                'spread': (entry.spread / abs(entry.value)
                           if entry.value and entry.spread else None)}
        return found

    def measurements(self, logged=None) -> dict:
        """What the test measured (BenchmarkTest answers)."""
        return {}

    @run_after('performance')
    def _fail_where_the_judge_fails(self):
        # Runs only when the published references passed (or judged
        # nothing): a published failure already failed the test (the
        # judge's first step), and its rows name the baseline's verdict too.
        try:
            self.site_baseline_verdicts()
        except ValueError as error:   # a file that is not a baseline
            raise PerformanceError(str(error)) from None
        judge = the_judge()
        failed = []
        for measured in self.measurements().values():
            if measured.sample is not None:
                continue        # a health sample never fails a job
            verdict = judge.measured_verdict(dataclasses.asdict(measured))
            if verdict['check_perf_result'] == 'fail' and \
                    verdict['check_fail_reason'] not in failed:
                failed.append(verdict['check_fail_reason'])
        if failed:
            raise PerformanceError('; '.join(filter(None, failed))
                                   or 'the judge failed a value')
