"""The base every clusterproof check derives from (not a test itself).

What each plugin adds, stage by stage, in the order ReFrame runs it
(``BenchmarkTest.pipeline_hooks()``):

- after setup: ExternalTool (external_tool.py) finds the tool or skips the test.
- before run, in this order: JobRequest (job_request.py) watches the
  job, skips what no node holds, sets the time limit and adds the
  partition's launcher options; NodeProbe (node_probe.py) puts its lines
  at the front of the job script: the one that records the nodes, then
  the node probe before the run (each node's VM size and health sample),
  before ExternalTool's guard (the tool is on the node); its probe after
  the run ends the script; the check's own hooks; FannedJob (fanned_job.py)
  turns a batch job into one step per node or pair, last.
- after run: NodeProbe reads, once, the nodes and the probe's files (the
  VM sizes, the health samples).
- sanity: ParsedOutput (parsed_output.py, FannedJob's base) parses the output
  once, per node or pair in a batch job.
- before performance: SkuReferences (sku_references.py) sets each metric's
  reference for the node's VM size and the run's method (thresholds only
  where nothing says otherwise); ParsedOutput adds the parsed perf
  variables; FannedJob makes them one per node or pair, last.
- performance: ReFrame compares each value with its thresholds.
- after performance: SiteBaselineVerdicts (site_baseline_verdicts.py)
  asks the one judge (config/results/rows/judge.py) for the verdict of
  every value (the site baseline beside the published reference) and
  fails the test where it says fail.

The test then lists what it measured (:meth:`BenchmarkTest.measurements`,
measurements.py); config/results/rows/builder.py makes a row of each,
judged by config/results/rows/judge.py.
"""
from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ

from . import measurements
from .fanned_job import FannedJob
from .job_request import JobRequest
from .node_probe import NodeProbe
from .site_baseline_verdicts import SiteBaselineVerdicts
from .sku_references import SkuReferences
from .external_tool import ExternalTool


class BenchmarkTest(rfm.RunOnlyRegressionTest, FannedJob, SkuReferences,
                    SiteBaselineVerdicts, ExternalTool, NodeProbe, JobRequest):
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

    def metric_keys_and_devices(self) -> tuple[dict, dict]:
        # site_baseline_verdicts.py asks
        return self.metric_reference_keys, self.metric_devices

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

    def partition_extra(self, name, default=None):
        return self.current_partition.extras.get(name, default)
