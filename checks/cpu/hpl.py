"""HPL: dense linear algebra rate (Gflops) on one or more nodes.

The job writes its own HPL.dat: one problem whose N fills a fraction of the
nodes' memory (or a given N), one NB, and the squarest P x Q grid of the
MPI tasks. The run passes when every residual check says PASSED; the best
row is the result, and its efficiency against the partition's peak is
reported where the peak is known.
"""
import reframe as rfm
import reframe.utility.sanity as sn

from ..common.benchmark import BenchmarkTest
from ..common.spack import FromSpack, SpackHpl
from ..common.layout import NodeLayout
from ..common.parsed_output import GUARD_PREFIX
from . import hpl_input

HINT = ('Spack: spack install hpl ^amdblis (AMD HB-series) or hpl '
        '^openblas, then spack load hpl (binary xhpl); Intel oneAPI MKL '
        'ships a prebuilt mp_linpack; Azure/woc-benchmarking apps/hpc/hpl '
        'has Azure\'s HB-series build and run scripts')


def peak_gflops_per_node(extras: dict) -> float | None:
    """The partition's published FP64 peak (Rpeak), None when unknown."""
    peak = extras.get('peak_gflops_per_node')
    return float(peak) if peak else None


@rfm.simple_test
class HplCheck(BenchmarkTest, NodeLayout):
    descr = 'HPL Gflops with a generated HPL.dat, residual checks PASSED'
    tags = {'cpu', 'acceptance'}
    valid_systems = ['+cpu']
    valid_prog_environs = ['+mpi']
    parser_tool = 'hpl'
    perf_metrics = {'gflops': 'Gflops'}
    reference_family = 'hpl'
    reference_key = 'hpl'
    tool_binary = 'xhpl'
    tool_hint = HINT

    #: Matrix order; 0 = the largest multiple of nb that fills
    #: memory_fraction of the nodes' memory (MemTotal, read on the node).
    n = variable(int, value=0)
    nb = variable(int, value=256)
    memory_fraction = variable(float, value=0.8)
    recorded_variables = ['n', 'nb', 'memory_fraction', 'num_nodes',
                          'tasks_per_node', 'threads_per_task']

    @run_after('setup')
    def set_threads_and_checks(self):
        self.env_vars['OMP_NUM_THREADS'] = str(self.threads_per_task)
        self.parser_options = {'expected_tasks': self.num_tasks}

    def grid(self) -> tuple[int, int]:
        return hpl_input.process_grid(self.num_tasks)

    @run_before('run')
    def write_hpl_dat(self):
        if self.n:
            size = f'N={self.n}'
        else:
            command = hpl_input.problem_size_command(
                self.memory_fraction, self.nb, self.num_nodes)
            size = f'N=$({command})'
        p, q = self.grid()
        self.prerun_cmds += [
            size,
            # Said on stderr with the prefix the sanity check reports
            f'[ "${{N:-0}}" -ge {self.nb} ] || {{ echo "{GUARD_PREFIX}'
            f'HPL problem size N=$N is unusable (NB={self.nb}); set -S n=..."'
            ' >&2; exit 1; }',
            f'cat > HPL.dat <<EOF\n{hpl_input.hpl_dat("$N", self.nb, p, q)}'
            'EOF',
            f'echo "HPL.dat written: N=$N NB={self.nb} P={p} Q={q}"',
        ]

    @run_before('performance')
    def add_efficiency(self):
        peak = peak_gflops_per_node(self.current_partition.extras)
        if not peak:
            return
        total = peak * self.num_nodes
        self.perf_variables['efficiency'] = sn.make_performance_function(
            self.parsed_metric('gflops') * 100.0 / total, '%')


@rfm.simple_test
class HplSpackCheck(HplCheck, FromSpack):
    descr = 'HPL built with Spack (ReFrame Spack build system)'
    tags = {'cpu'}
    spack_build = fixture(SpackHpl, scope='environment')
