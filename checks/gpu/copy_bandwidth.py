"""Copy bandwidth of every GPU with nvbandwidth, the way Azure's health
checks measure it (checks/references/nvbandwidth.yaml, source AzHC-bw):

    nvidia-smi -lgc <MHz>          # where the health checks lock clocks
    nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce \\
        device_to_device_memcpy_read_ce -i 10 [-j]
    nvidia-smi -rgc                # after the run

One row per GPU for ``h2d_bw`` and ``d2h_bw`` (the GPU's cell) and for
``p2p_read_bw`` (its slowest peer, named in the run's details), judged
against the health checks' floors where the run's method is theirs: copy
engine, ``-i 10``, and the clock they lock on that SKU (the yaml's
``locked_clock_mhz``). A lock that fails (no root, no sudo) is recorded and
makes the rows informational. P2P runs on every node with more than one GPU
(the health checks skip it when ``nvidia-smi nvlink --status`` prints
nothing; a node with NVLink down then shows as a slow P2P here, and in the
NVLink state check). Where the installed nvbandwidth has ``-j`` (v0.5 on,
NVIDIA/nvbandwidth json_output.cpp) the job asks for JSON; the parser reads
either.
"""
import os

import reframe as rfm

from .. import parsers
from ..common import references
from .per_gpu import PerGpuBenchmark, missing_gpus, renamed

TESTCASES = {'host_to_device_memcpy': 'h2d_bw',
             'device_to_host_memcpy': 'd2h_bw',
             'device_to_device_memcpy_read': 'p2p_read_bw'}
#: the reference entry whose method the run follows
HEALTH_CHECK_ENTRY = 'azhc'
NO_LOCK = 'none'
#: what the job writes about the clock lock (one line)
CLOCK_FILE = 'clusterproof_clock_lock.txt'


def clock_lock_lines(mhz: str) -> tuple[list[str], list[str]]:
    """Shell lines that lock the graphics clocks at *mhz* before the run
    and reset them after (``sudo -n``: never waits for a password), writing
    'locked <mhz>' or 'failed' to CLOCK_FILE."""
    lock = (f'if sudo -n nvidia-smi -lgc {mhz} >/dev/null 2>&1 || '
            f'nvidia-smi -lgc {mhz} >/dev/null 2>&1; then '
            f'echo "locked {mhz}" > {CLOCK_FILE}; '
            f'else echo failed > {CLOCK_FILE}; fi')
    reset = (f'if grep -q "^locked" {CLOCK_FILE} 2>/dev/null; then '
             'sudo -n nvidia-smi -rgc >/dev/null 2>&1 || '
             'nvidia-smi -rgc >/dev/null 2>&1; fi')
    return [lock], [reset]


def read_clock_file(path: str) -> str:
    try:
        with open(path) as fp:
            return fp.read(200).strip()
    except OSError:
        return ''


@rfm.simple_test
class GpuCopyBandwidth(PerGpuBenchmark):
    descr = 'nvbandwidth host<->GPU and GPU<->GPU copy bandwidth per GPU'
    parser_tool = 'nvbandwidth'
    reference_family = 'nvbandwidth'
    tool_binary = 'nvbandwidth'
    tool_hint = ('Azure HPC (ND) images with azurehpc-health-checks ship it '
                 'under $AZ_NHC_ROOT/bin; else build github.com/NVIDIA/'
                 'nvbandwidth (CUDA, C++17, CMake) and pass -S '
                 'tool_binary=PATH')
    tags = {'gpu', 'daily', 'acceptance'}
    expected_runtime_s = 120
    gpu_metrics = {'h2d_bw': 'GB/s', 'd2h_bw': 'GB/s',
                   'p2p_read_bw': 'GB/s'}
    gpu_peak_of = {'p2p_read_bw': 'nvlink_bw'}

    #: ce (copy engine, the health checks' testcases) or sm
    engine = variable(str, value='ce')
    samples = variable(int, value=10)
    #: MHz to lock the graphics clocks at; '' = the health checks' choice
    #: for the SKU (the yaml's locked_clock_mhz), 'none' = no lock
    locked_clock_mhz = variable(str, value='')
    #: what the job did: 'locked <MHz>', 'failed', or '' (not asked)
    clock_lock = variable(str, value='')
    recorded_variables = ['engine', 'samples', 'locked_clock_mhz',
                          'clock_lock']

    def testcases(self) -> list[str]:
        names = ['host_to_device_memcpy', 'device_to_host_memcpy']
        if self.gpu_count() > 1:
            names.append('device_to_device_memcpy_read')
        return [f'{name}_{self.engine}' for name in names]

    @run_after('setup')
    def choose_clock_and_metrics(self):
        if self.engine not in ('ce', 'sm'):
            raise ValueError(f'engine={self.engine!r}: ce or sm')
        if not self.locked_clock_mhz:
            method = references.lookup_method(
                self.reference_family, HEALTH_CHECK_ENTRY, self.vm_sku())
            self.locked_clock_mhz = str(method.get('locked_clock_mhz',
                                                   NO_LOCK))
        if self.gpu_count() <= 1:
            for var in [v for v in self.perf_metrics
                        if v.startswith('p2p_read_bw_')]:
                del self.perf_metrics[var]
                del self.metric_devices[var]

    def reference_method(self) -> dict:
        clock = self.locked_clock_mhz or NO_LOCK
        if clock != NO_LOCK and self.clock_lock != f'locked {clock}' \
                and self.clock_lock:
            clock = NO_LOCK      # asked for, not obtained
        return {'engine': self.engine, 'samples': self.samples,
                'locked_clock_mhz': clock}

    def write_command(self):
        if self.locked_clock_mhz != NO_LOCK:
            lock, reset = clock_lock_lines(self.locked_clock_mhz)
            self.prerun_cmds += lock
            self.postrun_cmds += reset
            self.keep_files.append(CLOCK_FILE)
        # JSON where this nvbandwidth has -j (its --help lists --json)
        self.prerun_cmds.append(
            f'nvbw_format=$({self.tool_binary} --help 2>&1 | '
            "grep -q -- '--json' && echo -j)")
        self.executable = self.tool_binary
        self.executable_opts = ['-t', *self.testcases(), '-i',
                                str(self.samples), '$nvbw_format']

    def read_run_files(self):
        if self.locked_clock_mhz == NO_LOCK:
            return
        self.clock_lock = read_clock_file(os.path.join(self.stagedir,
                                                       CLOCK_FILE))
        if self.clock_lock and self.clock_lock != \
                f'locked {self.locked_clock_mhz}':
            self.no_verdict_reasons.append(
                f'graphics clocks not locked at {self.locked_clock_mhz} MHz '
                '(nvidia-smi -lgc failed): the floors were measured locked')

    def parsed(self):
        return self.parsed_once('renamed', self._renamed)

    def _renamed(self):
        names = {f'{case}_{self.engine}': metric
                 for case, metric in TESTCASES.items()}
        result = renamed(super().parsed(), names, self.parser_tool)
        missing = missing_gpus(
            result, sorted({var.rsplit('_gpu', 1)[0]
                            for var in self.perf_metrics}),
            self.gpu_count())
        if result.ok and missing:
            result = parsers.failure(
                self.parser_tool, 'no value for ' + ', '.join(missing),
                result.metrics, result.details)
        return result
