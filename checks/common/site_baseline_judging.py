"""Judge a test's metrics against the site baseline when its rows are written.

With ``CLUSTERPROOF_BASELINES`` set, every metric that has a reference key
(sku_references.py) and a baseline entry for its cluster, test class, key
and device is checked against the entry's two-sided bounds, beside the
published reference (both are checked; neither replaces the other). A
metric outside them fails the test case with a reason naming the basis
(``site baseline: triad_bw 10382.9 MB/s: 16.1% below ...``), and its row
says ``fail`` with ``verdict_basis = site_baseline`` (config/results/rows/
builder.py reads :meth:`SiteBaselines.site_baseline_verdicts`).
"""
from __future__ import annotations

import reframe as rfm
from reframe.core.exceptions import PerformanceError

from . import site_baseline


class SiteBaselines(rfm.RegressionTestPlugin):
    def site_baseline_verdicts(self) -> dict[str, dict]:
        """Perf variable -> what the site baseline says of its value:
        {'fail', 'reason', 'value', 'lower', 'upper', 'source'}; only the
        variables that have an entry. Known once the performance stage has
        evaluated the values (failed or not). Judged once per set of
        values: the hook below and the row writer ask for the same."""
        measured = tuple((name, info[0]) for name, info
                         in (self.perfvalues or {}).items())
        judged = getattr(self, '_site_baseline_judged', None)
        if judged is not None and judged[0] == measured:
            return judged[1]
        found = self._judged_against_site_baseline()
        self._site_baseline_judged = (measured, found)
        return found

    def _judged_against_site_baseline(self) -> dict[str, dict]:
        layer = site_baseline.current()
        if not layer.entries:
            return {}
        keys = getattr(self, 'metric_reference_keys', {}) or {}
        devices = getattr(self, 'metric_devices', {}) or {}
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

    @run_after('performance')
    def _fail_outside_the_site_baseline(self):
        # Runs only when the published references passed (or judged
        # nothing): a published failure already failed the test, and its
        # rows name the baseline's verdict too.
        try:
            judged = self.site_baseline_verdicts()
        except ValueError as error:   # a file that is not a baseline
            raise PerformanceError(str(error)) from None
        failed = [v['reason'] for v in judged.values() if v['fail']]
        if failed:
            raise PerformanceError('; '.join(failed))
