"""HBM bandwidth of every GPU with BabelStream's CUDA model (UoB-HPC/
BabelStream; Spack ``babelstream +cuda`` builds it as ``cuda-stream``).

The job starts one ``cuda-stream --device <i>`` per GPU at once, each
writing ``babelstream_gpu<i>.out`` (stdout and stderr: BabelStream reports
a failed validation on stderr), and waits for all. One row per GPU and
kernel (``copy_bw``, ``mul_bw``, ``add_bw``, ``triad_bw``, ``dot_bw``, GB/s),
each with peaks.yaml's ``gpu.hbm_bw`` as its peak, so a row says "% of
peak". Nothing publishes a BabelStream floor for Azure: the Guide's typical
figures (checks/references/babelstream.yaml) are shown beside the rows, and
a slow GPU is found against its siblings (scripts/comparison/siblings.py).
A GPU whose output is missing, cut short or failed its validation fails
the run, named.
"""
import os
import shlex

import reframe as rfm

from .. import parsers
from .per_gpu import PerGpuBenchmark, gpu_var

KERNELS = ('copy_bw', 'mul_bw', 'add_bw', 'triad_bw', 'dot_bw')


def output_name(index: int) -> str:
    return f'babelstream_gpu{index}.out'


def launch_line(command: list[str], gpus: int) -> str:
    """One BabelStream per GPU in the background, then wait for all."""
    run = ' '.join(shlex.quote(word) for word in command)
    return (f'for i in $(seq 0 {gpus - 1}); do {run} --device "$i" '
            f'> babelstream_gpu"$i".out 2>&1 & done')


def per_gpu_result(results: dict[int, parsers.ParseResult]
                   ) -> parsers.ParseResult:
    """One result for every GPU: ``<metric>_gpu<i>``; failed GPUs named."""
    metrics, details, failed = {}, {}, []
    for index, result in sorted(results.items()):
        details[f'gpu{index}'] = result.details
        if not result.ok:
            failed.append(f'GPU {index}: {result.reason}')
            continue
        for name, metric in result.metrics.items():
            metrics[gpu_var(name, index)] = metric
    if failed:
        return parsers.failure('babelstream', '; '.join(failed), metrics,
                               {'gpus': details})
    return parsers.success('babelstream', metrics, {'gpus': details})


@rfm.simple_test
class GpuMemoryBandwidth(PerGpuBenchmark):
    descr = 'BabelStream (CUDA) memory bandwidth of every GPU'
    parser_tool = 'babelstream'
    reference_family = 'babelstream'
    tool_binary = 'cuda-stream'
    tool_hint = ('build github.com/UoB-HPC/BabelStream with -DMODEL=cuda '
                 '(or spack install babelstream +cuda) and pass -S '
                 'tool_binary=PATH')
    tool_is_executable = False
    tags = {'gpu', 'acceptance'}
    expected_runtime_s = 120
    gpu_metrics = {name: 'GB/s' for name in KERNELS}
    gpu_peak_of = {name: 'hbm_bw' for name in KERNELS}

    #: elements per array (--arraysize); 0 = BabelStream's default (2^25)
    array_size = variable(int, value=0)
    #: --numtimes; BabelStream's default is 100
    ntimes = variable(int, value=100)
    precision = variable(str, value='double')
    recorded_variables = ['array_size', 'ntimes', 'precision']

    def reference_method(self) -> dict:
        return {'source': 'UoB-HPC/BabelStream',
                'array_size': self.array_size or 2 ** 25,
                'ntimes': self.ntimes, 'precision': self.precision}

    def command(self) -> list[str]:
        words = [self.tool_binary, '--numtimes', str(self.ntimes)]
        if self.array_size:
            words += ['--arraysize', str(self.array_size)]
        if self.precision == 'float':
            words.append('--float')
        elif self.precision != 'double':
            raise ValueError(f'precision={self.precision!r}: double or '
                             'float')
        return words

    def write_command(self):
        self.prerun_cmds.append(launch_line(self.command(),
                                            self.gpu_count()))
        self.executable, self.executable_opts = 'wait', []
        self.keep_files += [output_name(i) for i in range(self.gpu_count())]

    def parsed(self):
        return self.parsed_once('per GPU', lambda: per_gpu_result({
            i: self.parse_file(os.path.join(self.output_dir(),
                                            output_name(i)))
            for i in range(self.gpu_count())}))
