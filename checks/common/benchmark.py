"""The base every clusterproof check derives from (not a test itself).

A check is this class and its two plugins: JobScript (job_script.py: what
the job asks of the scheduler and records about its nodes) and ParsedOutput
(parsed_output.py: the output parsed into perf variables, per node in a
batch job). The references and the verdicts are this class's own.

Its hooks are the only ones a check inherits; each calls the steps in the
order written here. A check's own hooks run after these, except after
those marked "last":

- after setup (``_set_up_the_run``): the size profile and the rank layout
  (job_request.py); the tool found, or the test skipped, or the job made
  to check for it first (external_tool.py).
- after setup, last (``_settle_the_job``), once the check's own hooks sized
  the run: the request settled (job_request.py: rank binding, a request no
  node holds is skipped, the time limit, the launcher's options); at the
  front of the job script the line that records the nodes and the node
  probe before the run (each node's VM size and health sample), and the
  probe after the run first after it (node_probe.py).
- before run, last (``_fan_out``), once the check's own hooks wrote its
  command: a batch job becomes one step per node or pair (fan_out_results.py).
- after run (``_read_what_the_job_recorded``): the nodes and the probe's
  files read, once (node_probe.py).
- sanity: the output parsed once, per node or pair in a batch job
  (ParsedOutput).
- before performance, last (``_name_the_values``): each metric's reference
  for the node's VM size and the run's method, with thresholds only where
  nothing says otherwise (sku_references.py); the parsed perf variables,
  the check's derived ones (:meth:`BenchmarkTest.derived_perf_variables`),
  then, in a batch job, one of each per node or pair (fan_out_results.py).
- performance: ReFrame compares each value with its thresholds.
- after performance (``_judge_the_values``): the one judge
  (config/results/rows/judge.py) gives every value its verdict
  (site_baseline_verdicts.py: the site baseline beside the published
  reference), and the test fails where it says fail.

The test then lists what it measured (:meth:`BenchmarkTest.measurements`,
measurements.py); config/results/rows/builder.py makes a row of each,
judged by config/results/rows/judge.py.
"""
from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.exceptions import PerformanceError

from . import measurements, site_baseline_verdicts, sku_references
from .job_script import JobScript
from .parsed_output import ParsedOutput


class BenchmarkTest(rfm.RunOnlyRegressionTest, ParsedOutput, JobScript):
    valid_systems = ['*']
    # MPI programs by default; OpenMP-only or serial checks narrow this.
    valid_prog_environs = ['+mpi']

    #: Variables worth keeping with every result (recorded in check_params
    #: next to the test's parameters).
    recorded_variables = variable(typ.List[str], value=[])

    #: Perf variable -> the device it measured ('bw_avg_mlx5_ib0' ->
    #: 'mlx5_ib0'). Its row then holds the metric ('bw_avg') and the device.
    metric_devices = variable(typ.Dict[str, str], value={})

    # The references (sku_references.py)
    #: Data file checks/references/<family>.yaml
    reference_family = variable(str, value='')

    #: Why this run must not be judged (another method than the reference's,
    #: a smoke size...): any reason keeps the references without thresholds,
    #: so the rows say 'informational'. Set before the performance stage.
    no_verdict_reasons = variable(typ.List[str], value=[])

    #: Metrics that add up the work of all the test's nodes (HPL Gflops):
    #: their per-node peak is multiplied by the test's num_nodes.
    peaks_scale_with_nodes = variable(typ.List[str], value=[])

    #: Filled from the reference data: metric -> where its value comes from.
    reference_sources = variable(typ.Dict[str, str], value={})

    #: Metric -> theoretical limit on this SKU in the metric's unit, and its
    #: source (filled from the reference data's peaks).
    metric_peaks = variable(typ.Dict[str, float], value={})
    peak_sources = variable(typ.Dict[str, str], value={})

    #: Perf variable -> its reference key (filled by the check; stored on
    #: the row as ``reference_key``).
    metric_reference_keys = variable(typ.Dict[str, str], value={})

    #: Perf variable -> why the reference shown beside it does not judge
    #: it (how the methods differ, what the source leaves unstated).
    reference_differences = variable(typ.Dict[str, typ.List[str]],
                                     value={})
    #: [the values judged, their verdicts] (site_baseline_verdicts.py).
    site_baseline_judged = variable(list, value=[], loggable=False)

    # What a check says about its run (override)
    def reference_method(self) -> dict:
        """The run's method fingerprint (reference_key.FINGERPRINTS)."""
        return {}

    def reference_nodes(self) -> int:
        # num_nodes is the run's own only where the check lays out its ranks
        return int(self.num_nodes or 1) if self.lays_out_ranks else 1

    def reference_fabric(self) -> str | None:
        return None

    def peak_factor(self) -> tuple[float, str]:
        """What a peak is multiplied by for this run, and why (2 for a
        bidirectional perftest, whose figure sums both directions)."""
        return 1, ''

    def derived_perf_variables(self) -> dict:
        """Perf variables the check computes from its parsed ones (HPL's
        efficiency against the peak): name -> performance function."""
        return {}

    def sku_peaks(self, sku: str) -> tuple[dict, dict]:
        """({metric: peak}, {metric: its source}) on a node of VM size
        *sku* in this run."""
        return sku_references.peaks(self, sku)

    # What the run is
    def vm_sku(self) -> str:
        """The SKU the node reported after the run (node_probe.py), else the
        one its partition declares."""
        return (self.vm_sku_observed
                or self.current_partition.extras.get('vm_sku', ''))

    def reference_metrics(self) -> dict[str, str]:
        """Perf variable -> the metric it is a value of: 'bw_avg_mlx5_ib0'
        of device 'mlx5_ib0' is a value of 'bw_avg'."""
        found = {}
        for var in self.perf_metrics:
            device = self.metric_devices.get(var)
            found[var] = (var[:-len(device) - 1]
                          if device and var.endswith(f'_{device}') else var)
        return found

    def reference_of(self, target: str, name: str):
        return sku_references.reference_of(self, target, name)

    def judge_without_verdict(self, reason: str) -> None:
        """Keep every reference of the run without thresholds, saying why
        (node_probe.py: a node of another VM size)."""
        self.no_verdict_reasons = list(self.no_verdict_reasons) + [reason]

    def nodes_pinned(self) -> list[str]:   # fan_out_results.py asks
        return list(self.pinned_nodes)

    def facts_by_metric(self) -> list[dict]:   # fan_out_results.py asks
        return [self.reference_sources, self.metric_reference_keys,
                self.metric_devices]

    # What it measured
    def site_baseline_verdicts(self) -> dict[str, dict]:
        return site_baseline_verdicts.judged(self)

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

    # The stages
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
        sku_references.set_references(self)
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
