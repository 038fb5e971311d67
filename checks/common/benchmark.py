"""The base every clusterproof check derives from (not a test itself).

Its hooks are the only ones a check inherits; each calls its plugins'
steps in the order written here. A check's own hooks run after these,
except after those marked "last":

- after setup (``_set_up_the_run``): JobRequest (job_request.py) resolves
  the size profile and lays out the ranks; ExternalTool (external_tool.py)
  finds the tool, or skips the test, or has the job check for it first.
- after setup, last (``_settle_the_job``), once the check's own hooks sized
  the run: JobRequest settles the request (rank binding, a request no node
  holds is skipped, the time limit, the launcher's options); NodeProbe
  (node_probe.py) puts at the front of the job script the line that
  records the nodes and the node probe before the run (each node's VM size
  and health sample), and the probe after the run first after it.
- before run, last (``_fan_out``), once the check's own hooks wrote its
  command: FannedJob (fanned_job.py) turns a batch job into one step per
  node or pair.
- after run (``_read_what_the_job_recorded``): NodeProbe reads, once, the
  nodes and the probe's files (the VM sizes, the health samples).
- sanity: ParsedOutput (parsed_output.py, FannedJob's base) parses the
  output once, per node or pair in a batch job.
- before performance, last (``_name_the_values``): SkuReferences
  (sku_references.py) sets each metric's reference for the node's VM size
  and the run's method (thresholds only where nothing says otherwise);
  ParsedOutput adds the parsed perf variables, the check its derived ones
  (:meth:`BenchmarkTest.derived_perf_variables`); FannedJob makes them one
  per node or pair.
- performance: ReFrame compares each value with its thresholds.
- after performance (``_judge_the_values``): site_baseline_verdicts.py
  asks the one judge
  (config/results/rows/judge.py) for the verdict of every value (the site
  baseline beside the published reference) and fails the test where it
  says fail.

The test then lists what it measured (:meth:`BenchmarkTest.measurements`,
measurements.py); config/results/rows/builder.py makes a row of each,
judged by config/results/rows/judge.py.
"""
from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.exceptions import PerformanceError

from . import measurements, site_baseline, site_baseline_verdicts
from .fanned_job import FannedJob
from .job_request import JobRequest
from .node_probe import NodeProbe
from .sku_references import SkuReferences
from .external_tool import ExternalTool


class BenchmarkTest(rfm.RunOnlyRegressionTest, FannedJob, SkuReferences,
                    ExternalTool, NodeProbe, JobRequest):
    valid_systems = ['*']
    # MPI programs by default; OpenMP-only or serial checks narrow this.
    valid_prog_environs = ['+mpi']

    #: Variables worth keeping with every result (recorded in check_params
    #: next to the test's parameters).
    recorded_variables = variable(typ.List[str], value=[])

    #: Perf variable -> the device it measured ('bw_avg_mlx5_ib0' ->
    #: 'mlx5_ib0'). Its row then holds the metric ('bw_avg') and the device.
    metric_devices = variable(typ.Dict[str, str], value={})

    def vm_sku(self) -> str:   # sku_references.py asks
        """The SKU the node reported after the run (node_probe.py), else the
        one its partition declares."""
        return self.vm_sku_observed or super().vm_sku()

    def reference_metrics(self) -> dict[str, str]:   # sku_references.py asks
        """Perf variable -> the metric it is a value of: 'bw_avg_mlx5_ib0'
        of device 'mlx5_ib0' is a value of 'bw_avg'."""
        found = {}
        for var in self.perf_metrics:
            device = self.metric_devices.get(var)
            found[var] = (var[:-len(device) - 1]
                          if device and var.endswith(f'_{device}') else var)
        return found

    def nodes_pinned(self) -> list[str]:   # fanned_job.py asks
        return list(self.pinned_nodes)

    def facts_by_metric(self) -> list[dict]:   # fanned_job.py asks
        return [self.reference_sources, self.metric_reference_keys,
                self.metric_devices]

    #: [the values judged, their verdicts]: judged once per set of values.
    site_baseline_judged = variable(list, value=[], loggable=False)

    def site_baseline_verdicts(self) -> dict[str, dict]:
        """Perf variable -> what the site baseline says of its value
        (site_baseline_verdicts.py); only the variables that have an entry.
        Known once the performance stage has evaluated the values. Judged
        once per set of values: the hook below and the rows ask alike."""
        measured = tuple((name, info[0]) for name, info
                         in (self.perfvalues or {}).items())
        judged = self.site_baseline_judged
        if judged and judged[0] == measured:
            return judged[1]
        found = site_baseline_verdicts.baseline_verdicts(
            dict(self.perfvalues or {}), self.metric_reference_keys,
            self.metric_devices,
            site_baseline.cluster_of(self.current_system.name),
            self.display_name.split(' ')[0])
        self.site_baseline_judged = [measured, found]
        return found

    def measurements(self, logged: dict | None = None) -> dict:
        """What this test measured: ReFrame's perf variable name -> its
        Measurement (measurements.py), from which its rows are made."""
        return measurements.of_test(self.test_facts(), logged)

    def test_facts(self) -> measurements.TestFacts:
        """What this test's plugins recorded, for its measurements."""
        try:
            baseline = self.site_baseline_verdicts()
        except ValueError:   # an unreadable baseline fails the test itself
            baseline = {}
        return measurements.TestFacts(
            **self.node_facts(), perfvalues=dict(self.perfvalues or {}),
            check_params=measurements.recorded_params(
                self, self.recorded_variables),
            no_verdict_reasons=tuple(self.no_verdict_reasons),
            reference_differences=dict(self.reference_differences),
            reference_sources=dict(self.reference_sources),
            metric_reference_keys=dict(self.metric_reference_keys),
            metric_devices=dict(self.metric_devices),
            metric_peaks=dict(self.metric_peaks),
            peak_sources=dict(self.peak_sources),
            metric_groups=dict(self.metric_groups),
            group_peaks=dict(self.group_peaks),
            group_peak_sources=dict(self.group_peak_sources),
            step_ranks=self.step_ranks,
            group_outcomes={**self.groups_not_measured,
                            **self.group_failures},
            node_metrics=dict(self.node_metrics or self.perf_metrics or {}),
            reference_of=lambda var: self.reference_of(
                self.current_partition.fullname, var),
            baseline_verdicts=baseline)

    def derived_perf_variables(self) -> dict:
        """Perf variables the check computes from its parsed ones (HPL's
        efficiency against the peak): name -> performance function."""
        return {}

    @run_after('setup')
    def _set_up_the_run(self):
        self.resolve_size_profile()
        self.lay_out_ranks()
        self.locate_tool()

    @run_after('setup', always_last=True)
    def _settle_the_job(self):
        self.settle_the_job_request()
        self.probe_around_the_run()

    @run_before('run', always_last=True)
    def _fan_out(self):
        self.fan_out_over_nodes()

    @run_after('run')
    def _read_what_the_job_recorded(self):
        self.read_the_node_probe()

    @run_before('performance', always_last=True)
    def _name_the_values(self):
        self.set_sku_references()
        self.add_parsed_perf_variables()
        self.perf_variables.update(self.derived_perf_variables())
        self.perf_variables_per_group()

    @run_after('performance')
    def _judge_the_values(self):
        # Runs only when the published references passed (or judged
        # nothing): a published failure already failed the test (the
        # judge's first step), and its rows name the baseline's verdict too.
        try:
            self.site_baseline_verdicts()
        except ValueError as error:   # a file that is not a baseline
            raise PerformanceError(str(error)) from None
        failed = site_baseline_verdicts.failures(self.measurements().values())
        if failed:
            raise PerformanceError('; '.join(filter(None, failed))
                                   or 'the judge failed a value')

    def partition_extra(self, name, default=None):
        return self.current_partition.extras.get(name, default)
