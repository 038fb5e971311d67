"""HPC Challenge (hpcc): HPL, STREAM, PTRANS, RandomAccess, FFT and MPI
ping-pong in one run. It installs from the distribution anywhere
(``apt-get install hpcc``), so it is what the embedded default and CI
measure for real; it complements STREAM and HPL proper, never replaces them.
On clusters its problem takes a quarter of the nodes' memory, far beyond
the caches, so StarSTREAM and HPL measure memory and compute (an hour or
more with a reference BLAS: it is in 'acceptance', not 'daily'); on the
local system it is a smoke size, recorded without a verdict.

hpcc reads ``hpccinf.txt`` from its working directory (written here into
the stage directory) and appends its results to ``hpccoutf.txt``.
"""
import math

import reframe as rfm

from ..common.benchmark import BenchmarkTest
from .hpl_input import expected_seconds, hpl_dat, process_grid

# hpccinf.txt = HPL.dat, a separator line, then PTRANS's extra sizes (none).
PTRANS_LINES = (
    '##### This line (no. 32) is ignored (it serves as a separator). ######\n'
    '0             Number of additional problem sizes for PTRANS\n'
    '1200          values of N\n'
    '0             number of additional blocking sizes for PTRANS\n'
    '40            values of NB\n'
)


# Smoke size: HPL order of the quick run on the local system.
SMOKE_N = 2000
# Gflops an HPCC rank (reference BLAS of the distribution) sustains, at
# least: only for the time limit.
GFLOPS_PER_RANK = 5.0


def hpccinf(n: int, nb: int, tasks: int) -> str:
    p, q = process_grid(tasks)
    return hpl_dat(n, nb, p, q) + PTRANS_LINES


class HpccBase(BenchmarkTest):
    lays_out_ranks = True
    has_smoke_size = True
    parser_tool = 'hpcc'
    parsed_stream = 'hpccoutf.txt'
    tool_binary = 'hpcc'
    tool_hint = ('Debian/Ubuntu: apt-get install hpcc openmpi-bin; Spack: '
                 'spack install hpcc, then spack load hpcc')
    perf_metrics = {
        'HPL_Tflops': 'Tflop/s',
        'StarSTREAM_Triad': 'GB/s',
        'SingleSTREAM_Triad': 'GB/s',
        'PTRANS_GBs': 'GB/s',
        'MPIRandomAccess_GUPs': 'GUP/s',
        'MPIFFT_Gflops': 'Gflop/s',
        'AvgPingPongLatency_usec': 'us',
        'AvgPingPongBandwidth_GBytes': 'GB/s',
    }
    reference_family = 'hpcc'
    peaks_scale_with_nodes = ['HPL_Tflops']
    bind_ranks = True

    #: HPL order N (also sizes STREAM, PTRANS, FFT); 0 = memory_fraction
    #: of the nodes' memory (extras 'memory_gib'), or SMOKE_N on the local
    #: system and where the memory is not declared.
    problem_size = variable(int, value=0)
    #: Fraction of the nodes' memory for HPL's matrix (HPCC's other tests
    #: use about as much again, one after the other).
    memory_fraction = variable(float, value=0.25)
    block_size = variable(int, value=80)
    recorded_variables = ['problem_size', 'block_size', 'memory_fraction',
                          'rank_binding', 'size_profile']

    def hpl_order(self) -> int:
        if self.problem_size:
            return self.problem_size
        memory_gib = self.partition_extra('memory_gib')
        if self.is_smoke() or not memory_gib:
            return SMOKE_N
        n = int(math.sqrt(self.memory_fraction * memory_gib * 2 ** 30 *
                          self.num_nodes / 8))
        return n - n % self.block_size

    @run_after('setup')
    def size_the_run(self):
        self.problem_size = self.hpl_order()
        if not self.partition_extra('memory_gib') and not self.is_smoke():
            self.no_verdict_reasons = [*self.no_verdict_reasons,
                                       'memory not declared: smoke size']
        self.parser_options = {'ranks': self.num_tasks}
        if self.num_tasks < 2:
            # hpcc prints -1 for ping-pong with one process: not measured
            self.perf_metrics = {name: unit for name, unit in
                                 self.perf_metrics.items()
                                 if 'PingPong' not in name}

    def reference_method(self) -> dict:
        return {'problem_size': self.problem_size,
                'ranks_per_node': self.num_tasks_per_node}

    def expected_seconds(self) -> float:
        # HPL dominates; the other tests take about as long again.
        rate = GFLOPS_PER_RANK * self.num_tasks
        return max(120.0, 2 * expected_seconds(self.problem_size, rate))

    @run_before('run')
    def write_input(self):
        with open(f'{self.stagedir}/hpccinf.txt', 'w') as fp:
            fp.write(hpccinf(self.problem_size, self.block_size,
                             self.num_tasks))


@rfm.simple_test
class HpccNode(HpccBase):
    descr = 'HPC Challenge on one node, one rank per core'
    tags = {'cpu', 'acceptance'}
    # one run per node: a batch of nodes is one job (fan_out_results.py)
    fans_out = True


@rfm.simple_test
class HpccTwoNodes(HpccBase):
    descr = 'HPC Challenge on two nodes, one rank each (MPI across nodes)'
    num_nodes = 2
    tasks_per_node = 1
    tags = {'cpu', 'network', 'acceptance'}
    # one run per pair: a batch of ring pairs is one job (fan_out_results.py)
    fans_out = True
    fan_group_size = 2

    @run_after('setup')
    def needs_two_nodes(self):
        self.skip_if(
            self.current_partition.scheduler.registered_name == 'local',
            'two nodes need a scheduler partition (the local one has one)')
