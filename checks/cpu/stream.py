"""STREAM: sustainable memory bandwidth of a node (OpenMP) or of several
nodes together (MPI), as the best rate of Copy, Scale, Add and Triad.

A STREAM number depends on how it was measured: array size, compiler flags
(non-temporal stores), thread count and placement. A run is judged against
a SKU's reference only when it follows the reference's method (stream.yaml,
``method``; see stream_method.py); the check then runs with the method's
threads and placement, and the binary must have its array size. Any other
run is recorded as informational, with its method in check_params.

The project's own method (``-S follow_reference_method=false``, and SKUs
whose reference names no method): one thread per core, OMP_PLACES=cores,
and each array at least four times the last-level cache (STREAM's rule);
where the SKU's cache is published, a binary built too small fails with the
size to rebuild with.
"""
import reframe as rfm
import reframe.utility.typecheck as typ

from ..common import launch
from ..common.benchmark import BenchmarkTest
from ..common.spack import FromSpack, SpackStream
from ..common import references
from . import stream_method

BYTES_PER_ELEMENT = 8

HINT = ('Spack: spack install stream +openmp stream_array_size=N, then '
        'spack load stream (binary stream_c.exe); or build '
        'github.com/jeffhammond/STREAM: gcc -O3 -fopenmp '
        '-DSTREAM_ARRAY_SIZE=N stream.c -o stream_c.exe, with N elements '
        'per array at least 4x the node\'s last-level cache in 8-byte words '
        '(100000000 is safe below 200 MB of cache); HBv5: Azure/'
        'woc-benchmarking apps/hpc/stream builds AMD\'s zen STREAM. To be '
        'judged against a SKU\'s reference, build it as the reference\'s '
        'method says (checks/references/stream.yaml, method.build)')

MPI_HINT = ('build Versions/stream_mpi.c of github.com/jeffhammond/STREAM: '
            'mpicc -O3 -fopenmp -DSTREAM_ARRAY_SIZE=N stream_mpi.c -o '
            'stream_mpi (N = elements of the whole array, spread over the '
            'ranks: at least 4x the L3 of all nodes in 8-byte words)')


def minimum_array_elements(l3_bytes: float | None, nodes: int = 1,
                           reference_elements: int | None = None
                           ) -> int | None:
    """Elements per array that dwarf the caches of ``nodes`` nodes (4x
    their last-level cache, STREAM's rule), or, where no cache size is
    published, the array size of the SKU's own reference run; None where
    neither is known."""
    if l3_bytes:
        return -(-int(4 * l3_bytes * nodes) // BYTES_PER_ELEMENT)
    if reference_elements:
        return reference_elements * nodes
    return None


class StreamBase(BenchmarkTest):
    parser_tool = 'stream'
    perf_metrics = {'copy_bw': 'MB/s', 'scale_bw': 'MB/s', 'add_bw': 'MB/s',
                    'triad_bw': 'MB/s'}
    reference_family = 'stream'
    expected_runtime_s = 120

    #: Elements per array (for MPI: of the whole array) the binary must
    #: have been built with at least; 0 = from the SKU's published cache
    #: size, no minimum where none is published. Only for the project's own
    #: method: a reference's method names its array size itself.
    array_size = variable(int, value=0)
    #: Run the way the SKU's reference was measured (its threads and OpenMP
    #: placement) where the reference data says how; False = the project's
    #: own method (every core, OMP_PLACES=cores, arrays >= 4x the L3).
    follow_reference_method = variable(typ.Bool, value=True)
    #: How the binary was built, as you know it (recorded with the result).
    stream_build = variable(str, value='')

    #: Filled by the check: the reference's method (stream.yaml) where the
    #: run follows one, the run's fingerprint, and the OpenMP settings in
    #: which it departs from the reference's run.
    reference_method_entry = variable(typ.Dict[str, object], value={})
    measured_method = variable(typ.Dict[str, object], value={})
    method_differences = variable(typ.List[str], value=[])

    def required_array_size(self, nodes: int = 1) -> int | None:
        if self.array_size:
            return self.array_size
        reference = (self.sku_method().get('method') or {}).get('array_size')
        return minimum_array_elements(self.partition_extra('l3_bytes'),
                                      nodes, reference)

    def openmp_env(self, threads: int) -> dict:
        # As in the HBv5 post: one thread per core, pinned
        return {'OMP_NUM_THREADS': str(threads), 'OMP_PROC_BIND': 'true',
                'OMP_PLACES': 'cores'}

    def sku_method(self) -> dict:
        """The first reference entry of the SKU that says how it was
        measured (method, env, build, source), or {}."""
        for entry in references.entries(self.reference_family,
                                        self.vm_sku()).values():
            if entry.get('method'):
                return entry
        return {}

    def ranks(self) -> int:
        return 1

    def planned_fingerprint(self) -> dict:
        """What the run is set up to be (a dry run has nothing else)."""
        planned = dict(self.reference_method_entry.get('method') or {})
        planned.update({'threads': int(self.env_vars['OMP_NUM_THREADS']),
                        'places': stream_method.places_label(
                            self.env_vars.get('OMP_PLACES')),
                        'ranks': self.ranks()})
        return planned

    def reference_method(self) -> dict:
        result = self.parsed()
        if not result.details.get('kernels'):
            return self.planned_fingerprint()
        return stream_method.run_fingerprint(result.details, self.env_vars,
                                             self.ranks())

    @run_after('sanity')
    def judge_only_the_same_method(self):
        """OpenMP settings the key does not hold must match too."""
        self.measured_method = self.reference_method()
        self.method_differences = stream_method.env_differences(
            self.reference_method_entry.get('env') or {}, self.env_vars)
        if self.method_differences:
            self.no_verdict_reasons = [
                *self.no_verdict_reasons,
                'OpenMP settings differ from the reference\'s: '
                + '; '.join(self.method_differences)]


@rfm.simple_test
class StreamCheck(StreamBase):
    descr = 'STREAM memory bandwidth of one node (OpenMP)'
    tags = {'cpu', 'daily', 'acceptance'}
    # one run per node: a batch of nodes is one job (fan_out_results.py)
    fans_out = True
    # One process: no MPI environment needed, and one run per partition
    valid_prog_environs = ['builtin']
    tool_binary = 'stream_c.exe'
    tool_hint = HINT
    oversized_hint = ('-S follow_reference_method=false runs one thread per '
                      'core (informational), -S num_threads=N sets N')

    #: OpenMP threads; 0 = the reference's method, else cores_per_node
    num_threads = variable(int, value=0)
    recorded_variables = ['array_size', 'num_threads', 'stream_build',
                          'follow_reference_method', 'measured_method',
                          'method_differences']

    @run_after('setup')
    def set_threads(self):
        cores = self.partition_extra('cores_per_node', 1)
        method = self.sku_method() if self.follow_reference_method else {}
        self.reference_method_entry = method
        if not self.num_threads:
            self.num_threads = (method.get('method') or {}).get(
                'threads') or cores
        self.num_tasks = 1
        # The process owns the node; OMP_PLACES says where threads go.
        self.num_cpus_per_task = max(cores, self.num_threads)
        self.env_vars.update(self.openmp_env(self.num_threads))
        self.env_vars.update({name: str(value) for name, value in
                              (method.get('env') or {}).items()})
        # The 4x-cache rule is the project's own method; a reference's
        # method names its own array size.
        minimum = None if method else self.required_array_size()
        self.parser_options = {'expected_threads': self.num_threads,
                               'min_array_elements': minimum}

    @run_before('run')
    def run_as_one_process(self):
        # mpirun would bind the single process to one core and squeeze every
        # thread onto it; srun keeps --cpus-per-task, so it stays.
        launch.single_process(self.job)


@rfm.simple_test
class StreamMpiCheck(StreamBase):
    lays_out_ranks = True
    descr = ('MPI STREAM: aggregate memory bandwidth, one rank per core, '
             'the arrays spread over the ranks')
    tags = {'cpu', 'acceptance'}
    valid_prog_environs = ['+mpi']
    tool_binary = 'stream_mpi'
    tool_hint = MPI_HINT

    recorded_variables = ['array_size', 'num_nodes', 'tasks_per_node',
                          'threads_per_task', 'measured_method',
                          'method_differences']

    def ranks(self) -> int:
        return self.num_tasks

    @run_after('setup')
    def set_threads_and_checks(self):
        self.env_vars.update(self.openmp_env(self.threads_per_task))
        self.parser_options = {
            'expected_threads': self.threads_per_task,
            'min_array_elements': self.required_array_size(self.num_nodes),
            'expected_ranks': self.num_tasks,
        }
        # The aggregate of N nodes: its key says N nodes, so it finds no
        # per-node reference; the per-node peaks add up.
        self.peaks_scale_with_nodes = list(self.perf_metrics)


@rfm.simple_test
class StreamSpackCheck(FromSpack, StreamCheck):
    descr = 'STREAM (OpenMP) built with Spack (ReFrame Spack build system)'
    tags = {'cpu', 'spack'}
    spack_build = fixture(SpackStream, scope='environment')
