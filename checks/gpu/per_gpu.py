"""What the checks that measure every GPU of a node share (not a test).

- One perf variable per metric and GPU, ``<metric>_gpu<i>``, for the
  partition's ``gpus_per_node`` GPUs: each stored row holds the metric, the
  device (``gpu<i>``) and, through ``metric_gpus``, the GPU's index, PCI bus
  id and serial (gpu_columns in rows/builder.py), read from the ``nvidia-smi -q -x``
  the health sampler takes before the run (checks/common/node_probe.sh),
  so that nothing probes the node twice.
- Each metric's theoretical limit comes from peaks.yaml's ``gpu`` figures
  (``hbm_bw``, ``nvlink_bw``), named per metric by the check
  (``gpu_peak_of``), so "% of peak" is shown beside "% of reference".
- The job runs from the batch shell of one node: the tools start one
  process per GPU themselves (or are told to); an MPI tool
  (``one_process = False``) gets one rank per GPU from the launcher.
"""
from __future__ import annotations

import dataclasses

import reframe.utility.typecheck as typ

from .. import parsers
from ..common import launch, references
from ..common.benchmark import BenchmarkTest
from ..health import gpu as gpu_state

#: peaks.yaml's family of per-GPU hardware limits
PEAKS_FAMILY = 'gpu'


def gpu_var(metric: str, index: int) -> str:
    """('h2d_bw', 3) -> 'h2d_bw_gpu3' (a device's perf variable)."""
    return f'{metric}_gpu{index}'


def gpu_identities(samples: dict) -> dict[int, dict]:
    """GPU index -> {'index', 'bus_id', 'serial'} from the first node's
    'before' health sample ({} where it has no readable nvidia-smi)."""
    for node in sorted(samples):
        before = samples[node].get('before')
        text = before.text('nvidia-smi') if before is not None else ''
        if not text.strip():
            continue
        try:
            sample = gpu_state.parse(text)
        except (ValueError, SyntaxError):
            return {}
        return {gpu.index: gpu.identity() for gpu in sample.gpus}
    return {}


def renamed(result: parsers.ParseResult, names: dict[str, str],
            tool: str) -> parsers.ParseResult:
    """*result* with each metric ``<old>_gpu<i>`` named ``<new>_gpu<i>``
    (``names``: old -> new); metrics not named are dropped."""
    metrics = {}
    for name, metric in result.metrics.items():
        old, sep, index = name.rpartition('_gpu')
        if sep and old in names and index.isdigit():
            metrics[f'{names[old]}_gpu{index}'] = metric
    if not result.ok:
        return parsers.failure(tool, result.reason, metrics, result.details)
    return parsers.success(tool, metrics, result.details)


def missing_gpus(result: parsers.ParseResult, metrics: list[str],
                 gpus: int) -> list[str]:
    """The perf variables of *gpus* GPUs the result has no value for."""
    return [gpu_var(metric, i) for metric in metrics for i in range(gpus)
            if gpu_var(metric, i) not in result.metrics]


class PerGpuBenchmark(BenchmarkTest):
    valid_systems = ['+gpu']
    valid_prog_environs = ['builtin']

    #: metric -> unit, each measured on every GPU
    gpu_metrics = variable(typ.Dict[str, str], value={})
    #: metric -> the peaks.yaml 'gpu' figure that bounds it
    gpu_peak_of = variable(typ.Dict[str, str], value={})
    #: perf variable -> the GPU it measured ({'index', 'bus_id', 'serial'})
    metric_gpus = variable(dict, value={}, loggable=False)
    #: False where the tool is an MPI program, one rank per GPU
    one_process = True

    def gpu_count(self) -> int:
        return int(self.partition_extra('gpus_per_node', 0) or 0)

    def test_facts(self):
        """BenchmarkTest's, with the GPU each value was measured on."""
        return dataclasses.replace(super().test_facts(),
                                   metric_gpus=dict(self.metric_gpus))

    @run_after('setup')
    def set_gpu_layout(self):
        gpus = self.gpu_count()
        self.skip_if(not gpus, f'{self.current_partition.fullname} declares '
                     'no gpus_per_node')
        self.num_tasks = self.num_tasks_per_node = 1
        # every GPU of the VM: Slurm's cgroups hide those not requested
        self.num_gpus_per_node = gpus
        self.perf_metrics = {gpu_var(metric, i): unit
                             for metric, unit in self.gpu_metrics.items()
                             for i in range(gpus)}
        self.metric_devices = {gpu_var(metric, i): f'gpu{i}'
                               for metric in self.gpu_metrics
                               for i in range(gpus)}

    def write_command(self) -> None:
        """Before run: the check's command line (each check writes its
        own)."""

    def read_run_files(self) -> None:
        """After run: what the check's job wrote beside its output."""

    @run_before('run')
    def write_the_command(self):
        self.write_command()
        if self.one_process:
            launch.batch_shell(self.job)

    @run_after('run')
    def read_the_run(self):
        self.name_the_gpus()
        self.read_run_files()

    def name_the_gpus(self):
        # the probe's files, as read once after the run (node_probe.py)
        found = gpu_identities(self.node_samples)
        self.metric_gpus = {
            gpu_var(metric, i): found.get(i, {'index': i})
            for metric in self.gpu_metrics for i in range(self.gpu_count())}

    def sku_peaks(self, sku: str) -> tuple[dict, dict]:
        peaks = references.lookup_peaks(PEAKS_FAMILY, sku)
        values, sources = {}, {}
        for metric, name in self.gpu_peak_of.items():
            if name in peaks:
                values[metric] = peaks[name].value
                sources[metric] = peaks[name].describe()
        return values, sources
