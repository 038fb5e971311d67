"""HPC Challenge (hpcc): HPL, STREAM, PTRANS, RandomAccess, FFT and MPI
ping-pong in one short run. It installs from the distribution anywhere
(``apt-get install hpcc``), so it is what the embedded default and CI
measure for real; it complements STREAM and HPL proper, never replaces them.

hpcc reads ``hpccinf.txt`` from its working directory (written here into
the stage directory) and appends its results to ``hpccoutf.txt``.
"""
import math

import reframe as rfm

from ..common.benchmark import BenchmarkTest
from ..common.layout import NodeLayout
from .hpl_input import hpl_dat, process_grid

# hpccinf.txt = HPL.dat, a separator line, then PTRANS's extra sizes (none).
PTRANS_LINES = (
    '##### This line (no. 32) is ignored (it serves as a separator). ######\n'
    '0             Number of additional problem sizes for PTRANS\n'
    '1200          values of N\n'
    '0             number of additional blocking sizes for PTRANS\n'
    '40            values of NB\n'
)


def hpccinf(n: int, nb: int, tasks: int) -> str:
    p, q = process_grid(tasks)
    return hpl_dat(n, nb, p, q) + PTRANS_LINES


class HpccBase(BenchmarkTest, NodeLayout):
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

    #: HPL order N (also sizes STREAM, PTRANS, FFT); small by default so a
    #: CI run takes seconds. memory_fraction > 0 sizes it for the nodes.
    problem_size = variable(int, value=2000)
    #: Fraction of the nodes' memory (extras 'memory_gib') for HPL's matrix.
    memory_fraction = variable(float, value=0.0)
    block_size = variable(int, value=80)
    recorded_variables = ['problem_size', 'block_size', 'memory_fraction']

    def hpl_order(self) -> int:
        memory_gib = self.partition_extra('memory_gib')
        if self.memory_fraction <= 0 or not memory_gib:
            return self.problem_size
        n = int(math.sqrt(self.memory_fraction * memory_gib * 2 ** 30 *
                          self.num_nodes / 8))
        return n - n % self.block_size

    @run_before('run')
    def write_input(self):
        self.parser_options = {'ranks': self.num_tasks}
        if self.num_tasks < 2:
            # hpcc prints -1 for ping-pong with one process: not measured
            self.perf_metrics = {name: unit for name, unit in
                                 self.perf_metrics.items()
                                 if 'PingPong' not in name}
        with open(f'{self.stagedir}/hpccinf.txt', 'w') as fp:
            fp.write(hpccinf(self.hpl_order(), self.block_size,
                             self.num_tasks))


@rfm.simple_test
class HpccNode(HpccBase):
    descr = 'HPC Challenge on one node, one rank per core'
    tags = {'cpu', 'daily', 'acceptance'}


@rfm.simple_test
class HpccTwoNodes(HpccBase):
    descr = 'HPC Challenge on two nodes, one rank each (MPI across nodes)'
    num_nodes = 2
    tasks_per_node = 1
    tags = {'cpu', 'network', 'daily', 'acceptance'}

    @run_after('setup')
    def needs_two_nodes(self):
        self.skip_if(
            self.current_partition.scheduler.registered_name == 'local',
            'two nodes need a scheduler partition (the local one has one)')
