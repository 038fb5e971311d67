"""HPCG: sparse linear algebra rate (GFLOP/s) of a VALID run.

HPCG prints nothing on stdout: the result is its report file in the stage
directory, HPCG-Benchmark_3.1_*.txt (3.1, NVIDIA) or
HPCG-Benchmark-3.0_*.yaml (3.0). An INVALID report fails the test.
"""
import reframe as rfm

from ..common.benchmark import BenchmarkTest
from ..common.spack import FromSpack, SpackHpcg

HINT = ('Spack: spack install hpcg +openmp, then spack load hpcg (binary '
        'xhpcg); or build github.com/hpcg-benchmark/hpcg: mkdir build && cd '
        'build && ../configure MPI_GCC_OMP && make (bin/xhpcg); Intel oneAPI '
        'MKL ships optimised xhpcg_* binaries')

# Official HPCG results need at least this many seconds of benchmark time.
OFFICIAL_RUNTIME = 1800
# Smoke size (the local system): a small grid for a few seconds.
SMOKE_GRID = 16
SMOKE_RUNTIME = 10
# Set-up, reference run and validation before the timed phase, at most.
SETUP_SECONDS = 300


def hpcg_dat(nx: int, ny: int, nz: int, runtime: int) -> str:
    """hpcg.dat: two free lines, the local grid, the run time in seconds."""
    return (f'HPCG benchmark input file\nclusterproof\n{nx} {ny} {nz}\n'
            f'{runtime}\n')


@rfm.simple_test
class HpcgCheck(BenchmarkTest):
    lays_out_ranks = True
    has_smoke_size = True
    descr = 'HPCG GFLOP/s rating of a VALID run, one MPI rank per core'
    tags = {'cpu', 'acceptance'}
    # one run per node: a batch of nodes is one job (fan_out_results.py)
    fans_out = True
    valid_systems = ['+cpu']
    valid_prog_environs = ['+mpi']
    parser_tool = 'hpcg'
    parsed_stream = 'HPCG-Benchmark*'
    perf_metrics = {'gflops': 'GFLOP/s'}
    reference_family = 'hpcg'
    tool_binary = 'xhpcg'
    tool_hint = HINT
    peaks_scale_with_nodes = ['gflops']
    bind_ranks = True

    #: Local grid of each rank (HPCG rounds each up to a multiple of 8)
    nx = variable(int, value=104)
    ny = variable(int, value=104)
    nz = variable(int, value=104)
    #: Seconds of benchmark time; an official run needs OFFICIAL_RUNTIME
    runtime = variable(int, value=60)
    recorded_variables = ['nx', 'ny', 'nz', 'runtime', 'num_nodes',
                          'tasks_per_node', 'threads_per_task',
                          'rank_binding', 'size_profile']

    @run_after('setup')
    def set_threads_and_checks(self):
        self.env_vars['OMP_NUM_THREADS'] = str(self.threads_per_task)
        self.parser_options = {'expected_processes': self.num_tasks}
        if self.is_smoke():
            self.nx = self.ny = self.nz = SMOKE_GRID
            self.runtime = SMOKE_RUNTIME

    def expected_seconds(self) -> float:
        return self.runtime + SETUP_SECONDS

    def reference_method(self) -> dict:
        return {'nx': self.nx, 'ny': self.ny, 'nz': self.nz,
                'runtime': self.runtime,
                'ranks_per_node': self.num_tasks_per_node,
                'threads_per_rank': self.threads_per_task}

    @run_before('run')
    def set_input(self):
        text = hpcg_dat(self.nx, self.ny, self.nz, self.runtime)
        self.prerun_cmds += [f"cat > hpcg.dat <<'EOF'\n{text}EOF"]
        # HPCG 3.0 ignores the run time in hpcg.dat unless --rt is given
        # (it then runs in QuickPath mode), so say it on the command line too.
        self.executable_opts = [f'--nx={self.nx}', f'--ny={self.ny}',
                                f'--nz={self.nz}', f'--rt={self.runtime}']


@rfm.simple_test
class HpcgSpackCheck(FromSpack, HpcgCheck):
    descr = 'HPCG built with Spack (ReFrame Spack build system)'
    tags = {'cpu', 'spack'}
    spack_build = fixture(SpackHpcg, scope='environment')
