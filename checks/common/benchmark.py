"""The base every clusterproof check derives from (not a test itself).

What each plugin adds, stage by stage, in the order ReFrame runs it
(``BenchmarkTest.pipeline_hooks()``):

- after setup: ExternalTool (tools.py) finds the tool or skips the test.
- before run, in this order: JobRequest (job_request.py) watches the
  job, skips what no node holds and sets the time limit; HealthSampling
  (health_sampling.py), VmSize (vm_size.py) and JobNodes (job_nodes.py)
  each put a line at the front of the job script, so that it starts with
  JobNodes' (record the nodes), then VmSize's (ask each node's VM size),
  then ExternalTool's guard (the tool is on the node), then
  HealthSampling's (sample health before the run; its sample after the run
  ends the script); BenchmarkTest adds the partition's launcher options; FansOut
  (fanned_job.py) turns a batch job into one step per node or pair, last.
- after run: HealthSampling reads the samples, VmSize the VM sizes, JobNodes
  the nodes (each reads the nodes file JobNodes' line wrote).
- sanity: ParsedOutput (parsed_output.py, FansOut's base) parses the output
  once, per node or pair in a batch job.
- before performance: SkuReferences (sku_references.py) sets each metric's
  reference for the node's VM size and the run's method (thresholds only
  where nothing says otherwise); ParsedOutput adds the parsed perf
  variables; FansOut makes them one per node or pair, last.
- performance: ReFrame compares each value with its thresholds.
- after performance: SiteBaselines (site_baseline_judging.py) fails the
  test outside the site's baseline.

The rows of the run are then made by config/results/rows/builder.py and
judged by config/results/rows/judge.py.
"""
from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ

from . import launch
from .fanned_job import FansOut
from .health_sampling import HealthSampling
from .job_nodes import JobNodes
from .job_request import JobRequest
from .site_baseline_judging import SiteBaselines
from .sku_references import SkuReferences
from .vm_size import VmSize
from .tools import ExternalTool


class BenchmarkTest(rfm.RunOnlyRegressionTest, FansOut, SkuReferences,
                    SiteBaselines, ExternalTool, JobNodes, VmSize,
                    HealthSampling, JobRequest):
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
        """The SKU the node reported after the run (vm_size.py), else the
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

    def partition_extra(self, name, default=None):
        return self.current_partition.extras.get(name, default)

    @run_before('run')
    def _add_partition_launcher_options(self):
        # e.g. ['--mpi=pmix'] on Slurm partitions whose MpiDefault is none
        launch.add_options(self.job,
                           self.partition_extra('launcher_options', []))
