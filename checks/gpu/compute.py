"""Compute of every GPU: gpu_burn (wilicc/gpu-burn) on all GPUs at once,
with each GPU's clocks, temperature, power and clock event reasons sampled
*while* it runs.

    nvidia-smi --query-gpu=index,...,clocks_throttle_reasons.active \\
        --format=csv,noheader,nounits -l 5 > clusterproof_gpu_during.csv &
    gpu_burn -d -tc 60
    kill <the sampler>

One row per GPU for ``gflops`` (its rate in gpu_burn's last progress
record), ``errors`` (its compare errors, 0 on a passing run), and from the
samples ``sm_clock_min`` (MHz), ``temp_max`` (C) and ``power_max`` (W);
the clock event reasons that slowed a GPU are recorded in
``gpu_slowdowns``. gpu_burn exits 0 for a faulty GPU: its text decides
(checks/parsers/gpu_burn.py), and a GPU with errors, or one that did no work
while its siblings ran, fails the run by name whatever the exit code.

Two tiers: GpuComputeQuick (60 s, tagged daily) and GpuComputeBurn
(600 s, acceptance). The tool, the seconds and the precision are the
reference key (checks/references/gpu_compute.yaml): a level published for
another tool (ubergemm) is neither shown beside gpu_burn's rows nor judges
them; gpu_burn's rows are judged against their sibling GPUs
(scripts/comparison/siblings.py).
"""
import os

import reframe as rfm
import reframe.utility.typecheck as typ

from .. import parsers
from ..parsers import nvidia_smi_query
from .per_gpu import PerGpuBenchmark, gpu_var

SAMPLES_FILE = 'clusterproof_gpu_during.csv'
SAMPLER_METRICS = {'sm_clock_min': 'MHz', 'temp_max': 'C', 'power_max': 'W'}
PRECISIONS = {'float': [], 'double': ['-d'],
              'double+tensor_cores': ['-d', '-tc'],
              'float+tensor_cores': ['-tc']}


def sampler_lines(seconds: int) -> tuple[list[str], list[str]]:
    """Start the sampler in the background before the load, stop it
    after."""
    start = (f'{nvidia_smi_query.command(seconds)} > {SAMPLES_FILE} '
             '2>&1 & clusterproof_sampler=$!')
    stop = ('kill "$clusterproof_sampler" 2>/dev/null; '
            'wait "$clusterproof_sampler" 2>/dev/null')
    return [start], [stop]


class GpuComputeBase(PerGpuBenchmark):
    parser_tool = 'gpu-burn'
    reference_family = 'gpu_compute'
    tool_binary = 'gpu_burn'
    tool_hint = ('build github.com/wilicc/gpu-burn (make; run it from its '
                 'directory, it reads compare.ptx there) and pass -S '
                 'tool_binary=PATH')
    gpu_metrics = {'gflops': 'Gflop/s', 'errors': 'count',
                   **SAMPLER_METRICS}

    #: seconds of load (gpu_burn's TIME argument)
    seconds = variable(int, value=60)
    precision = variable(str, value='double+tensor_cores')
    #: seconds between two samples of the GPUs during the load
    sample_every_s = variable(int, value=5)
    #: GPU index -> clock event reasons that slowed it during the load
    gpu_slowdowns = variable(typ.Dict[str, typ.List[str]], value={})
    recorded_variables = ['seconds', 'precision', 'sample_every_s',
                          'gpu_slowdowns']

    def expected_seconds(self) -> float:
        return self.seconds + 60   # start-up, memory set-up, the summary

    def reference_method(self) -> dict:
        return {'tool': 'gpu_burn', 'seconds': self.seconds,
                'precision': self.precision}

    def write_command(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f'precision={self.precision!r}: one of '
                             + ', '.join(PRECISIONS))
        start, stop = sampler_lines(self.sample_every_s)
        self.prerun_cmds += start
        self.postrun_cmds = stop + self.postrun_cmds
        self.keep_files.append(SAMPLES_FILE)
        self.executable = self.tool_binary
        self.executable_opts = [*PRECISIONS[self.precision],
                                str(self.seconds)]

    def samples(self) -> dict:
        path = os.path.join(self.stagedir, SAMPLES_FILE)
        try:
            with open(path, errors='replace') as fp:
                return nvidia_smi_query.parse(fp.read())
        except OSError:
            return {}

    def read_run_files(self):
        during = self.samples()
        self.gpu_slowdowns = {str(i): gpu.slowdowns()
                              for i, gpu in sorted(during.items())
                              if gpu.slowdowns()}
        # a GPU the sampler never saw has no sampled rows (its GEMM rows
        # stay): the sampler is not the measurement
        for i in range(self.gpu_count()):
            gpu = during.get(i)
            for metric in SAMPLER_METRICS:
                if gpu is None or getattr(gpu, metric) is None:
                    self.perf_metrics.pop(gpu_var(metric, i), None)
                    self.metric_devices.pop(gpu_var(metric, i), None)

    def parsed(self):
        return self.parsed_once('with samples', self._with_samples)

    def _with_samples(self):
        result = super().parsed()
        for i, gpu in self.samples().items():
            for metric, unit in SAMPLER_METRICS.items():
                value = getattr(gpu, metric)
                if value is not None:
                    result.metrics[gpu_var(metric, i)] = \
                        parsers.Metric(value, unit)
        return result


@rfm.simple_test
class GpuComputeQuick(GpuComputeBase):
    descr = 'gpu_burn on every GPU at once for 60 s, sampled during the load'
    tags = {'gpu', 'daily'}
    seconds = 60


@rfm.simple_test
class GpuComputeBurn(GpuComputeBase):
    descr = ('gpu_burn on every GPU at once for 10 minutes, sampled during '
             'the load')
    tags = {'gpu', 'acceptance'}
    seconds = 600
