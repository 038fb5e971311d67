"""The base every clusterproof check derives from (not a test itself)."""
from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ

from . import launch
from .fanned_job import FansOut
from .health_sampling import HealthSampling
from .job_nodes import JobNodes
from .node_fit import FitsPartition
from .progress import ReportsProgress
from .site_baseline_judging import SiteBaselines
from .sku_references import SkuReferences
from .time_limit import TimeLimited
from .vm_size import VmSize
from .tools import ExternalTool


class BenchmarkTest(rfm.RunOnlyRegressionTest, FansOut, SkuReferences,
                    SiteBaselines, ExternalTool, JobNodes, VmSize,
                    HealthSampling, TimeLimited, FitsPartition,
                    ReportsProgress):
    valid_systems = ['*']
    # MPI programs by default; OpenMP-only or serial checks narrow this.
    valid_prog_environs = ['+mpi']

    #: Variables worth keeping with every result (recorded in check_params
    #: next to the test's parameters).
    recorded_variables = variable(typ.List[str], value=[])

    #: Filled from the reference data: metric -> where its value comes from.
    reference_sources = variable(typ.Dict[str, str], value={})

    #: Perf variable -> the device it measured ('bw_avg_mlx5_ib0' ->
    #: 'mlx5_ib0'). Its row then holds the metric ('bw_avg') and the device.
    metric_devices = variable(typ.Dict[str, str], value={})

    #: Metric -> theoretical limit on this SKU in the metric's unit, and its
    #: source (filled from the reference data's peaks).
    metric_peaks = variable(typ.Dict[str, float], value={})
    peak_sources = variable(typ.Dict[str, str], value={})

    def partition_extra(self, name, default=None):
        return self.current_partition.extras.get(name, default)

    @run_before('run')
    def _add_partition_launcher_options(self):
        # e.g. ['--mpi=pmix'] on Slurm partitions whose MpiDefault is none
        launch.add_options(self.job,
                           self.partition_extra('launcher_options', []))
