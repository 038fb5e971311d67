"""HPL: dense linear algebra rate (Gflops) on one or more nodes.

The job writes its own HPL.dat: one problem whose N fills a fraction of the
nodes' memory (or a given N), one NB chosen for the BLAS the binary uses,
and the squarest P x Q grid of the MPI tasks, each rank pinned to its
core(s). Where a published recipe gives the SKU's layout (Azure/
woc-benchmarking for HBv2/HBv3/HBv4: ranks per L3 domain with threaded
BLIS, its P x Q and NB; config/systems/sku_facts.yaml) it is the default;
elsewhere (HBv5, HX) ranks are flat, one per core, and the row says so
(``layout_source``).
The run passes when every residual check says PASSED and every result row
is a problem the HPL.dat asked for; the best row is the result. Its
efficiency is given against the SKU's FP64 Rpeak (checks/references/
peaks.yaml) where one is known. On the local system the problem is a quick
smoke size, recorded without a verdict.
"""
import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ

from ..common import references
from ..common.benchmark import BenchmarkTest
from ..common.job_end import GUARD_PREFIX
from ..common.spack import FromSpack, SpackHpl
from . import hpl_input

HINT = ('Spack: spack install hpl ^amdblis (AMD HB-series) or hpl '
        '^openblas, then spack load hpl (binary xhpl); Intel oneAPI MKL '
        'ships a prebuilt mp_linpack; Azure/woc-benchmarking apps/hpc/hpl '
        'has Azure\'s HB-series build and run scripts')

# A smoke problem takes seconds on a laptop core.
SMOKE_N = 4000
# Gflops per core assumed for the time limit where no peak is known:
# below what a current core sustains, so the limit errs on the long side.
ASSUMED_GFLOPS_PER_CORE = 10.0


@rfm.simple_test
class HplCheck(BenchmarkTest):
    lays_out_ranks = True
    has_smoke_size = True
    descr = 'HPL Gflops with a generated HPL.dat, residual checks PASSED'
    tags = {'cpu', 'acceptance'}
    # one run per node: a batch of nodes is one job (fan_out_results.py)
    fans_out = True
    valid_systems = ['+cpu']
    valid_prog_environs = ['+mpi']
    parser_tool = 'hpl'
    perf_metrics = {'gflops': 'Gflops'}
    reference_family = 'hpl'
    peaks_scale_with_nodes = ['gflops']
    tool_binary = 'xhpl'
    tool_hint = HINT
    bind_ranks = True

    #: Matrix order; 0 = the largest multiple of nb that fills
    #: memory_fraction of the nodes' memory (MemTotal, read on the node).
    n = variable(int, value=0)
    #: Block size; 0 = the usual one for blas_family
    nb = variable(int, value=0)
    #: BLAS the xhpl binary links: mkl, aocl, blis, openblas ('' = the
    #: partition's extras['blas_family'], else a generic NB)
    blas_family = variable(str, value='')
    memory_fraction = variable(float, value=0.8)
    recorded_variables = ['n', 'nb', 'blas_family', 'memory_fraction',
                          'num_nodes', 'tasks_per_node', 'threads_per_task',
                          'rank_binding', 'layout_source', 'size_profile']

    #: Where a published recipe gives the SKU's layout (extras
    #: ['hpl_layout'], config/systems/sku_facts.yaml: ranks and OpenMP
    #: threads per node, P x Q and NB of one VM), run it; False = flat.
    follow_recipe = variable(typ.Bool, value=True)
    #: What the layout follows (recorded with the result)
    layout_source = variable(str, value='')

    @run_after('setup')
    def lay_out_and_size_the_run(self):
        self.apply_published_layout()
        self.set_sizes_and_checks()

    def apply_published_layout(self):
        recipe = self.partition_extra('hpl_layout')
        if self.tasks_per_node or self.threads_per_task != 1:
            self.layout_source = 'as given (-S tasks_per_node/threads_per_task)'
            return
        if not (recipe and self.follow_recipe):
            self.layout_source = ('flat: one rank per core (no published '
                                  'recipe for this SKU)' if not recipe
                                  else 'flat: one rank per core (-S '
                                  'follow_recipe=false)')
            return
        self.threads_per_task = recipe['threads_per_task']
        self.num_tasks_per_node = recipe['tasks_per_node']
        self.num_tasks = self.num_nodes * self.num_tasks_per_node
        self.num_cpus_per_task = self.threads_per_task
        partition_blas = self.partition_extra('blas_family', '')
        if not self.nb and self.blas_family in ('', partition_blas):
            self.nb = recipe['nb']     # the recipe's BLAS (AMD BLIS)
        self.layout_source = 'published recipe: ' + (
            self.partition_extra('fact_sources', {}).get('hpl_layout')
            or 'extras hpl_layout')

    def set_sizes_and_checks(self):
        self.env_vars['OMP_NUM_THREADS'] = str(self.threads_per_task)
        self.parser_options = {'expected_tasks': self.num_tasks}
        self.blas_family = (self.blas_family or
                            self.partition_extra('blas_family', ''))
        if not self.nb:
            self.nb = hpl_input.block_size_for(self.blas_family)
        if not self.n and self.is_smoke():
            self.n = SMOKE_N - SMOKE_N % self.nb

    def reference_method(self) -> dict:
        return {'ranks_per_node': self.num_tasks_per_node,
                'threads_per_rank': self.threads_per_task, 'nb': self.nb}

    def grid(self) -> tuple[int, int]:
        recipe = self.partition_extra('hpl_layout') or {}
        if (self.layout_source.startswith('published recipe')
                and self.num_nodes == 1):
            return recipe['p'], recipe['q']
        return hpl_input.process_grid(self.num_tasks)

    def planned_order(self) -> int:
        """N as the job will size it (for the time limit)."""
        if self.n:
            return self.n
        memory_gib = self.partition_extra('memory_gib', 0)
        if not memory_gib:
            return SMOKE_N
        return hpl_input.problem_size(memory_gib * 2 ** 30 * self.num_nodes,
                                      self.memory_fraction, self.nb)

    def expected_seconds(self) -> float:
        peaks = references.lookup_peaks(self.reference_family, self.vm_sku())
        if 'gflops' in peaks:
            rate = 0.5 * peaks['gflops'].value * self.num_nodes
        else:
            rate = ASSUMED_GFLOPS_PER_CORE * self.num_tasks * \
                self.threads_per_task
        return max(60.0, hpl_input.expected_seconds(self.planned_order(),
                                                    rate))

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

    def output_problem(self, result):
        path = os.path.join(self.output_dir(), 'HPL.dat')
        if not os.path.isfile(path):
            return 'HPL.dat was not written by the job'
        with open(path) as fp:
            asked = hpl_input.read_hpl_dat(fp.read())
        wrong = hpl_input.rows_not_asked_for(result.details.get('rows', []),
                                             asked)
        if wrong:
            return 'HPL ran another problem than its HPL.dat: ' + \
                '; '.join(wrong)
        return None

    def derived_perf_variables(self) -> dict:
        # the peak is the node's VM size's (sku_references.py), set by now
        peak = self.metric_peaks.get('gflops')
        if not peak:
            return {}
        return {'efficiency': sn.make_performance_function(
            self.parsed_metric('gflops') * 100.0 / peak, '%')}


@rfm.simple_test
class HplSpackCheck(FromSpack, HplCheck):
    descr = 'HPL built with Spack (ReFrame Spack build system)'
    tags = {'cpu', 'spack'}
    spack_build = fixture(SpackHpl, scope='environment')
