"""OSU micro-benchmarks: MPI latency and bandwidth between two nodes, and
collective latency across N nodes, with host (cpu) or GPU (cuda) buffers.

Where the binaries come from, first found wins:
- ``-S osu_dir=DIR``: a directory holding osu_latency, osu_bw, ...;
- HPC-X (Azure HPC images, environment ``hpcx`` = ``module load mpi/hpcx``):
  ``$HPCX_OSU_DIR``, or ``$HPCX_OSU_CUDA_DIR`` for cuda buffers;
- PATH, e.g. after ``spack load osu-micro-benchmarks``.
"""
import os

import reframe as rfm
import reframe.utility.typecheck as typ

from .. import parsers
from ..common.benchmark import BenchmarkTest
from ..common.spack import FromSpack, SpackOsu
from ..parsers import osu

# What OMB measures up to when not told otherwise (-m)
POINT_TO_POINT_MAX_SIZE = 4 * 1024 * 1024
COLLECTIVE_MAX_SIZE = 1024 * 1024


class OsuBase(BenchmarkTest):
    """One OMB benchmark; the value at one message size is the result, the
    whole curve stays in the output and in the parser's details."""

    lays_out_ranks = True
    parser_tool = 'osu'
    reference_family = 'osu'
    expected_runtime_s = 120   # one OMB sweep between two nodes
    tool_hint = ('Azure HPC images: module load mpi/hpcx (HPC-X ships OMB '
                 'in $HPCX_OSU_DIR and $HPCX_OSU_CUDA_DIR); Spack: spack '
                 'install osu-micro-benchmarks (+cuda for GPU buffers), then '
                 'spack load osu-micro-benchmarks; or -S osu_dir=DIR')

    buffer = parameter(['cpu', 'cuda'])
    #: '' = the benchmark's name, found in osu_dir, HPC-X or PATH
    tool_binary = ''

    #: Message size whose value is reported; 0 = 8 B for latency, 4 MiB
    #: for bandwidth (the parser's defaults).
    message_size = variable(int, value=0)
    #: Directory of the OMB binaries; '' = HPC-X's, then PATH.
    osu_dir = variable(str, value='')
    extra_options = variable(typ.List[str], value=[])
    recorded_variables = ['message_size', 'buffer']

    default_max_size = POINT_TO_POINT_MAX_SIZE
    #: OMB's GPU-buffer flags: point-to-point tests take the buffer place
    #: of each side (D D: both on the device); collectives take -d alone.
    cuda_buffer_options = ['-d', 'cuda', 'D', 'D']

    @run_after('init')
    def set_buffer_kind(self):
        if self.buffer == 'cuda':
            # GPU partitions carry the 'gpu' feature (gpus_per_node > 0)
            self.valid_systems = ['+gpu']
            self.tags = self.tags | {'gpu'}
            self.num_gpus_per_node = 1
        if not self.tool_binary:
            self.tool_binary = (os.path.join(self.osu_dir, self.benchmark)
                                if self.osu_dir else self.benchmark)
        if self.benchmark in ('osu_bw', 'osu_bibw'):
            self.perf_metrics = {'bandwidth': 'MB/s'}
        else:
            self.perf_metrics = {'latency': 'us'}

    def reference_method(self) -> dict:
        kind = 'bandwidth' if 'bandwidth' in self.perf_metrics else 'latency'
        size = self.message_size or osu.DEFAULT_SIZE[kind]
        return {'test': self.benchmark, 'size': size,
                'ranks_per_node': self.num_tasks_per_node,
                'buffer': self.buffer}

    @run_after('setup')
    def find_osu_and_its_buffers(self):
        self.set_hpcx_path()
        self.skip_cuda_without_gpus()

    def set_hpcx_path(self):
        if self.osu_dir:
            return
        hpcx_dir = 'HPCX_OSU_CUDA_DIR' if self.buffer == 'cuda' \
            else 'HPCX_OSU_DIR'
        # Expanded by the job script, after the environment's modules load.
        self.env_vars['PATH'] = f'${{{hpcx_dir}:+${hpcx_dir}:}}$PATH'

    def skip_cuda_without_gpus(self):
        if self.buffer == 'cuda':
            self.skip_if(not self.partition_extra('gpus_per_node', 0),
                         'cuda buffers need a partition with gpus_per_node')

    def parsed(self):
        result = super().parsed()
        problem = result.ok and osu.buffer_problem(result.details,
                                                   self.buffer)
        if problem:
            return parsers.failure(self.parser_tool, problem,
                                   result.metrics, result.details)
        if result.ok or result.details.get('curve'):
            return result
        # OMB prints its refusals, and the launcher its abort, on stderr:
        # they explain an empty or cut stdout better than stdout does.
        stderr = os.path.join(self.output_dir(), self.stream_names()[1])
        if os.path.isfile(stderr):
            with open(stderr, errors='replace') as fp:
                cause = osu.failure_cause(fp.read())
            if cause:
                return parsers.failure(self.parser_tool,
                                       f'{result.reason}; stderr: {cause}')
        return result

    @run_before('run')
    def set_command_line(self):
        options = []
        if self.message_size:
            self.parser_options = {'size': self.message_size}
            if self.message_size > self.default_max_size:
                options += ['-m', f'{self.message_size}']
        if self.buffer == 'cuda':
            options += self.cuda_buffer_options
        self.executable_opts = [*self.run_options(), *options,
                                *self.extra_options]

    def run_options(self) -> list[str]:
        """Options of the benchmark's run itself, ahead of the size and
        buffer options (a collective's iterations and validation)."""
        return []


@rfm.simple_test
class OsuPointToPoint(OsuBase):
    descr = 'OSU point-to-point latency and bandwidth between two nodes'
    benchmark = parameter(['osu_latency', 'osu_bw', 'osu_bibw'])
    # one rank on each of two nodes, pinned to its core
    num_nodes = 2
    tasks_per_node = 1
    bind_ranks = True
    tags = {'network', 'daily', 'acceptance'}
    # one run per pair: a batch of ring pairs is one job (fan_out_results.py)
    fans_out = True
    fan_group_size = 2
    #: The HCA the pair talks over (UCX_NET_DEVICES=<hca>:1): '' = the
    #: partition's first where it has several (the row's device says
    #: which); on single-HCA partitions UCX's own choice.
    hca = variable(str, value='')
    recorded_variables = ['message_size', 'buffer', 'hca', 'rank_binding']

    @run_after('setup')
    def choose_hca(self):
        hcas = self.partition_extra('ib_hcas', [])
        if not self.hca and len(hcas) > 1:
            self.hca = hcas[0]
        if self.hca:
            self.env_vars['UCX_NET_DEVICES'] = f'{self.hca}:1'
            self.metric_devices = {name: self.hca
                                   for name in self.perf_metrics}


@rfm.simple_test
class OsuCollective(OsuBase):
    """Every core of each node is a rank (a collective of one rank per node
    would be point-to-point traffic), pinned to its core; OMB validates
    each result (-c) with a datatype whose reduction it checks exactly
    (GPU buffers: one rank per GPU):
    OMB 7.4's default MPI_CHAR fails its own check at 16 B where MPI_INT
    passes (tests/support/data/osu/PROVENANCE-built-here.md)."""
    descr = 'OSU collective latency across nodes, every core a rank'
    benchmark = parameter(['osu_allreduce', 'osu_alltoall'])
    num_nodes = 2
    #: 0 = one rank per core (the partition's cores_per_node)
    tasks_per_node = 0
    bind_ranks = True
    #: OMB's warm-up and measured iterations (-x, -i)
    warmup_iterations = variable(int, value=100)
    iterations = variable(int, value=1000)
    #: OMB's validation (-c); the run fails on any row not saying Pass
    validate = variable(typ.Bool, value=True)
    #: -T: the datatype (OMB 7 or later); '' = OMB's default
    validation_datatype = variable(str, value='mpi_int')
    recorded_variables = ['message_size', 'buffer', 'num_nodes',
                          'tasks_per_node', 'rank_binding',
                          'warmup_iterations', 'iterations', 'validate',
                          'validation_datatype']
    tags = {'network', 'acceptance'}

    default_max_size = COLLECTIVE_MAX_SIZE
    cuda_buffer_options = ['-d', 'cuda']

    def ranks_per_node(self) -> int:
        # GPU buffers: one rank per GPU
        if self.buffer == 'cuda' and not self.tasks_per_node:
            return self.partition_extra('gpus_per_node', 1)
        return super().ranks_per_node()

    @run_after('setup')
    def one_gpu_per_rank(self):
        if self.buffer == 'cuda':
            self.num_gpus_per_node = self.num_tasks_per_node

    def run_options(self) -> list[str]:
        options = ['-x', str(self.warmup_iterations),
                   '-i', str(self.iterations)]
        if self.validate:
            options.append('-c')
            if self.validation_datatype:
                options += ['-T', self.validation_datatype]
            self.parser_options = {**self.parser_options, 'validated': True}
        return options


@rfm.simple_test
class OsuPointToPointSpack(FromSpack, OsuPointToPoint):
    descr = 'OSU point-to-point, built with Spack (host buffers)'
    buffer = parameter(['cpu'], inherit_params=False)
    tags = {'network', 'spack'}
    spack_build = fixture(SpackOsu, scope='environment')
