"""nccl-tests on GPU partitions: one VM (one rank per GPU), or N VMs.

Runs all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf
and sendrecv_perf through srun (PMIx), with the environment the partition
declares for NCCL (extras['nccl_env']: topology file, PCI order, relaxed
ordering, socket interface) and its GPU order (extras['gpu_binding'] ->
CUDA_VISIBLE_DEVICES), each rank bound to its NUMA domain (--cpu-bind=ldoms;
with block distribution this mirrors the `mpirun --map-by ppr:8:node
--bind-to numa` line of the GPU/IB monitoring post).

Only partitions with the 'gpu' feature (gpus_per_node > 0) run it. The
parser fails the run when it shows fewer ranks than the job asked for.
"""
import reframe as rfm
import reframe.utility.typecheck as typ

from ..common.benchmark import BenchmarkTest

COLLECTIVES = ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall',
               'sendrecv']

# Not SKU facts but what the seed's nccl-tests line sets on every ND VM:
# HPC-X's hcoll is off for the MPI bootstrap (-mca coll_hcoll_enable 0).
BASE_ENV = {'OMPI_MCA_coll_hcoll_enable': '0'}


class NcclBase(BenchmarkTest):
    parser_tool = 'nccl'
    reference_family = 'nccl'
    tool_hint = ('Azure HPC (ND) images ship nccl-tests in '
                 '/opt/nccl-tests/build (the default nccl_tests_dir); '
                 'elsewhere build github.com/NVIDIA/nccl-tests with MPI=1 '
                 '(rccl-tests on ROCm) and pass -S nccl_tests_dir=DIR')
    perf_metrics = {'avg_busbw': 'GB/s', 'busbw': 'GB/s',
                    'busbw_inplace': 'GB/s', 'latency_small': 'us'}
    valid_systems = ['+gpu']
    tags = {'gpu', 'network', 'acceptance'}
    expected_runtime_s = 300   # a sweep to 8-16 GiB on 8-16 GPUs

    collective = parameter(COLLECTIVES)
    #: '' = <collective>_perf, looked up in nccl_tests_dir, then PATH
    tool_binary = ''

    #: Put ahead of PATH in the job (Azure HPC image location by default).
    nccl_tests_dir = variable(str, value='/opt/nccl-tests/build')
    min_bytes = variable(str, value='8')
    max_bytes = variable(str, value='16G')
    step_factor = variable(int, value=2)
    #: GPUs per rank (-g); one rank per GPU by default.
    gpus_per_rank = variable(int, value=1)
    #: Laid over the partition's extras['nccl_env'] (-S nccl_env=K:V,K:V).
    nccl_env = variable(typ.Dict[str, str], value={})
    #: CUDA_VISIBLE_DEVICES; '' = the partition's extras['gpu_binding'].
    gpu_binding = variable(str, value='')
    #: srun --cpu-bind value; '' leaves binding to Slurm's defaults.
    cpu_bind = variable(str, value='ldoms')
    extra_options = variable(typ.List[str], value=[])
    recorded_variables = ['collective', 'min_bytes', 'max_bytes',
                          'gpus_per_rank']

    multinode = False

    def node_count(self) -> int:
        return 1

    @run_after('init')
    def set_binary(self):
        if not self.tool_binary:
            self.tool_binary = f'{self.collective}_perf'
        self.reference_key = (f'{self.collective}_{self.max_bytes}'
                              + ('_multinode' if self.multinode else ''))

    @run_after('setup')
    def set_layout(self):
        gpus = self.partition_extra('gpus_per_node', 0)
        # Also guards partitions that carry 'gpu' without a GPU count.
        self.skip_if(not gpus, f'{self.current_partition.fullname} declares '
                     'no gpus_per_node')
        self.gpus_per_node = gpus
        ranks_per_node = gpus // self.gpus_per_rank
        self.num_tasks_per_node = ranks_per_node
        self.num_tasks = self.node_count() * ranks_per_node
        # --gres=gpu:N through the partition's _rfm_gpu resource
        self.num_gpus_per_node = gpus
        self.parser_options = {
            'expected_ranks': self.num_tasks * self.gpus_per_rank}

    @run_after('setup')
    def set_environment(self):
        env = {**BASE_ENV, **self.partition_extra('nccl_env', {}),
               **self.nccl_env}
        binding = self.gpu_binding or self.partition_extra('gpu_binding')
        if binding:
            env['CUDA_VISIBLE_DEVICES'] = binding
        if self.nccl_tests_dir:
            env['PATH'] = f'{self.nccl_tests_dir}:$PATH'
        self.env_vars.update(env)

    @run_before('run')
    def set_command_line(self):
        if self.cpu_bind:
            self.job.launcher.options.append(f'--cpu-bind={self.cpu_bind}')
        self.executable_opts = [
            '-b', self.min_bytes, '-e', self.max_bytes,
            '-f', str(self.step_factor), '-g', str(self.gpus_per_rank),
        ] + self.extra_options


@rfm.simple_test
class NcclSingleNode(NcclBase):
    descr = 'nccl-tests on one GPU VM, one rank per GPU'


@rfm.simple_test
class NcclMultiNode(NcclBase):
    descr = 'nccl-tests across GPU VMs, one rank per GPU'
    recorded_variables = NcclBase.recorded_variables + ['num_nodes']
    num_nodes = variable(int, value=2)
    multinode = True

    def node_count(self) -> int:
        return self.num_nodes
