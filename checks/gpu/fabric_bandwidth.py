"""GB200/GB300 fabric bandwidth per GPU inside one NVLink domain: the
multi-node build of nvbandwidth (cmake -DMULTINODE=1, NVIDIA/nvbandwidth
README), one MPI rank per GPU on every node of the job, needing IMEX (which
CycleCloud starts in each job's prolog on these VMs, see
checks/gpu/nvlink_fabric.py):

    srun nvbandwidth -t multinode_device_to_device_memcpy_read_ce -i 10

One row per GPU of the job, ``fabric_read_bw`` (GB/s): the slowest peer
of rank p, named in the run's details with its host; the device is
``gpu<p>`` (the rank), and the row's GPU columns hold the GPU's index on
its own node and its bus id, as nvbandwidth's ``Process p (<host>):
device d: <name> (<bus id>)`` lines say. Its peak is peaks.yaml's
``gpu.nvlink_bw`` (900 GB/s per direction on GB200/GB300). Nothing
publishes a floor yet: the rows say how each GPU compares with the peak
and with the other GPUs of its domain.

Runs on partitions whose VMs talk over multi-node NVLink
(extras['nccl_multinode_fabric'] == 'mnnvl'), once per NVLink domain in
acceptance's set phase (scripts/acceptance/nvlink.py), beside NcclMultiNode.
"""
import dataclasses

import reframe as rfm

from .. import parsers
from .per_gpu import PerGpuBenchmark, gpu_var

TESTCASE = 'multinode_device_to_device_memcpy_read_ce'
METRIC = 'fabric_read_bw'


@rfm.simple_test
class GpuFabricBandwidth(PerGpuBenchmark):
    descr = ('nvbandwidth (multi-node build) GPU-to-GPU read bandwidth of '
             'every GPU inside one NVLink domain')
    parser_tool = 'nvbandwidth'
    reference_family = 'nvbandwidth'
    tool_binary = 'nvbandwidth'
    tool_hint = ('build github.com/NVIDIA/nvbandwidth with -DMULTINODE=1 '
                 '(MPI, CUDA 12.3 or later) and pass -S tool_binary=PATH')
    valid_prog_environs = ['+mpi']
    tags = {'gpu', 'network', 'acceptance'}
    expected_runtime_s = 300
    gpu_metrics = {METRIC: 'GB/s'}
    gpu_peak_of = {METRIC: 'nvlink_bw'}

    num_nodes = 2
    samples = variable(int, value=10)
    #: the NVLink domain all nodes of the run share ('<ClusterUUID>/
    #: <CliqueId>'), set by acceptance for its per-domain runs
    nvlink_domain = variable(str, value='')
    recorded_variables = ['num_nodes', 'samples', 'nvlink_domain']

    def test_facts(self):
        """PerGpuBenchmark's, with the run's NVLink domain."""
        return dataclasses.replace(super().test_facts(),
                                   nvlink_domain=self.nvlink_domain or None)

    def gpu_total(self) -> int:
        return self.gpu_count() * self.num_nodes

    def reference_method(self) -> dict:
        return {'engine': 'ce', 'samples': self.samples,
                'locked_clock_mhz': 'none'}

    def reference_nodes(self) -> int:
        return self.num_nodes

    def reference_fabric(self) -> str:
        return 'mnnvl'

    @run_after('setup')
    def on_nvlink_racks_only(self):
        self.skip_if(self.partition_extra('nccl_multinode_fabric') != 'mnnvl',
                     f'{self.current_partition.fullname} has no multi-node '
                     'NVLink')
        gpus = self.gpu_count()
        self.num_tasks_per_node = gpus
        self.num_tasks = self.gpu_total()
        self.perf_metrics = {gpu_var(METRIC, p): 'GB/s'
                             for p in range(self.gpu_total())}
        self.metric_devices = {gpu_var(METRIC, p): f'gpu{p}'
                               for p in range(self.gpu_total())}

    one_process = False

    def write_command(self):
        self.executable = self.tool_binary
        self.executable_opts = ['-t', TESTCASE, '-i', str(self.samples)]

    def name_the_gpus(self):
        details = self.parsed().details.get('devices', {})
        self.metric_gpus = {
            gpu_var(METRIC, p): {
                'index': details.get(str(p), {}).get('local_device'),
                'bus_id': details.get(str(p), {}).get('bus_id')}
            for p in range(self.gpu_total())}

    def parsed(self):
        return self.parsed_once('fabric', self._named_by_gpu)

    def _named_by_gpu(self):
        result = super().parsed()
        metrics = {name.replace(f'{TESTCASE}_', f'{METRIC}_', 1): metric
                   for name, metric in result.metrics.items()
                   if name.startswith(f'{TESTCASE}_gpu')}
        missing = [var for var in self.perf_metrics
                   if var not in metrics]
        if result.ok and missing:
            result = parsers.failure(
                self.parser_tool, 'no value for ' + ', '.join(missing),
                metrics, result.details)
        elif result.ok:
            result = parsers.success(self.parser_tool, metrics,
                                     result.details)
        else:
            result = parsers.failure(self.parser_tool, result.reason,
                                     metrics, result.details)
        return result
