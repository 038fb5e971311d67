"""nccl-tests on GPU partitions: one VM (one rank per GPU), or N VMs.

Runs all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf
and sendrecv_perf through srun (PMIx), with the environment Azure's recipes
set for NCCL on the partition's SKU (extras['nccl_env'], plus
extras['nccl_env_multinode'] across VMs; config/systems/nccl_recipes.py
names the recipe of each variable), the first topology file of
extras['nccl_topo_files'] that exists on the node (recorded with the
result as nccl_topo_file), and its GPU order (extras['gpu_binding'] ->
CUDA_VISIBLE_DEVICES), each rank bound to its NUMA domain (srun
--distribution=block:block --cpu-bind=ldoms, see common/launch.py: the
`mpirun --map-by ppr:8:node --bind-to numa` line of the GPU/IB monitoring
post).

Only partitions with the 'gpu' feature (gpus_per_node > 0) run it. The
parser fails the run when it shows fewer ranks than the job asked for.

The transport is proven, not assumed: NCCL logs its choices (NCCL_DEBUG=INFO,
subsystems INIT and NET) and the run fails, with the reason, unless the log
shows the expected fabric: NVLink (P2P or NVLS, nothing through host memory
or the network) on one VM; InfiniBand with GPUDirect RDMA on every
inter-node channel across VMs (or multi-node NVLink where the partition or
-S fabric=mnnvl says so). The reference key holds the collective, the
largest size, the node count and that fabric (checks/references/nccl.yaml).

The health checks' floors (checks/references/nccl.yaml, azhc) judge only
NcclHealthCheckAllReduce, which runs all_reduce as
azurehpc-health-checks' customTests/azure_nccl_allreduce.nhc does: one
message size, NCCL_TOPO_FILE set empty, data checked (-c 1), the script's
own environment (extras['nccl_env_azhc']) and no GPU order, judged on its
"# Avg bus bandwidth". A sweep is shown beside those floors, unjudged: its
key differs in the smallest size and the topology file. On ND A100 v4,
NcclHealthCheckIbLoopback runs the health checks' second NCCL test
(customTests/azure_nccl_allreduce_ib_loopback.nhc): the same one-size
all_reduce on one VM with shared memory and GPU peer-to-peer off, so that
all traffic goes through the VM's own InfiniBand HCAs (fabric 'ib', one
node), judged by the conf's 18 GB/s floor (nccl.yaml, azhc_ib_loopback).

The GPU order (extras['gpu_binding']) is set inside the job step, on the
command line (``env CUDA_VISIBLE_DEVICES=... all_reduce_perf ...``): srun
with --gres rewrites CUDA_VISIBLE_DEVICES for each step, so a value
exported by the batch script would be lost.
"""
import dataclasses
import os
import shlex

import reframe as rfm
import reframe.utility.typecheck as typ

from ..common import launch, references
from ..common.benchmark import BenchmarkTest
from ..health import fingerprint
from ..parsers.nccl import FABRICS

COLLECTIVES = ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall',
               'sendrecv']

# Not SKU facts but what the seed's nccl-tests line sets on every ND VM:
# HPC-X's hcoll is off for the MPI bootstrap (-mca coll_hcoll_enable 0).
# NCCL logs its network and transport choices, which the parser checks.
BASE_ENV = {'OMPI_MCA_coll_hcoll_enable': '0',
            'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': 'INIT,NET'}

#: -S fabric=off: run without proving the transport (no verdict either).
UNCHECKED = 'off'

#: Where the job writes the topology file it chose (or nothing).
TOPO_FILE_RECORD = 'clusterproof_nccl_topo_file.txt'


def choose_topo_file_command(candidates: list[str]) -> str:
    """Shell that exports NCCL_TOPO_FILE as the first existing candidate
    and records it (an empty record: none exists, NCCL detects alone)."""
    paths = ' '.join(shlex.quote(path) for path in candidates)
    return (f'for f in {paths}; do if [ -e "$f" ]; then '
            'export NCCL_TOPO_FILE="$f"; break; fi; done; '
            f'echo "${{NCCL_TOPO_FILE:-}}" > {TOPO_FILE_RECORD}')


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
    #: Bind each rank to its NUMA domain ('numa'), to a core ('core'), or
    #: leave binding to the launcher's defaults ('').
    cpu_bind = variable(str, value='numa')
    #: Fabric the run must prove: '' = 'nvlink' on one VM, across VMs the
    #: partition's extras['nccl_multinode_fabric'] or 'ib'; 'mnnvl' for
    #: multi-node NVLink (GB200/GB300 in one rack); 'off' = don't check.
    fabric = variable(str, value='')
    extra_options = variable(typ.List[str], value=[])
    #: The topology file the job chose (extras['nccl_topo_files']); ''
    #: when none exists or -S nccl_env=NCCL_TOPO_FILE:... fixed it.
    nccl_topo_file = variable(str, value='')
    #: Whether the job recorded its choice (nccl_topo_file is then what
    #: the node had, '' for none).
    nccl_topo_file_recorded = variable(typ.Bool, value=False)
    #: The NVLink domain all nodes of the run share ('<ClusterUUID>/
    #: <CliqueId>'), set by acceptance for its per-domain MNNVL runs.
    nvlink_domain = variable(str, value='')
    recorded_variables = ['collective', 'min_bytes', 'max_bytes',
                          'gpus_per_rank', 'fabric', 'nccl_topo_file']

    multinode = False

    def test_facts(self):
        """BenchmarkTest's, with the run's NVLink domain."""
        return dataclasses.replace(super().test_facts(),
                                   nvlink_domain=self.nvlink_domain or None)

    def nccl_version(self) -> str | None:   # health_sampling.py asks
        """The NCCL version the output names (its fingerprint)."""
        try:
            with open(os.path.join(self.stagedir, self.stdout.evaluate()),
                      errors='replace') as fp:
                return fingerprint.nccl_version(fp.read())
        except OSError:
            return fingerprint.nccl_version('')
    def node_count(self) -> int:
        return 1

    @run_after('init')
    def set_binary(self):
        if not self.tool_binary:
            self.tool_binary = f'{self.collective}_perf'

    def expected_fabric(self) -> str:
        if self.fabric:
            return self.fabric
        if not self.multinode:
            return 'nvlink'
        return self.partition_extra('nccl_multinode_fabric', 'ib')

    def topo_file_label(self) -> str:
        """NCCL_TOPO_FILE as the key reads it: 'none' when unset or set
        empty, the path set or found on the node, or 'image' while the
        job's choice among the image's files is not known (a dry run)."""
        if 'NCCL_TOPO_FILE' in self.env_vars:
            return self.env_vars['NCCL_TOPO_FILE'] or 'none'
        if self.nccl_topo_file_recorded:
            return self.nccl_topo_file or 'none'
        return 'image' if self.partition_extra('nccl_topo_files') else 'none'

    def reference_method(self) -> dict:
        return {'collective': self.collective, 'size': self.max_bytes,
                'min_size': self.min_bytes,
                'topo_file': self.topo_file_label(),
                'algo': self.env_vars.get('NCCL_ALGO') or 'default'}

    def recipe_env(self) -> dict:
        """NCCL's environment from the partition: Azure's recipes."""
        return self.partition_extra('nccl_env', {})

    def gpu_order(self) -> str:
        return self.gpu_binding or self.partition_extra('gpu_binding', '')

    def reference_nodes(self) -> int:
        return self.node_count()

    def reference_fabric(self) -> str:
        """The fabric the run proved; a run without a proven fabric finds
        no reference."""
        fabric = self.expected_fabric()
        return 'unproven' if fabric == UNCHECKED else fabric

    def allowed_fabrics(self) -> tuple[str, ...]:
        return ('nvlink',) if not self.multinode else FABRICS[1:]

    @run_after('setup')
    def set_up_the_run(self):
        self.set_fabric()
        self.set_layout()
        self.set_environment()
        self.follow_the_method()

    def follow_the_method(self) -> None:
        """The method a check runs beside its sweep (the health checks'
        one size); nothing for the sweep itself."""

    def set_fabric(self):
        fabric = self.expected_fabric()
        allowed = self.allowed_fabrics()
        if fabric not in allowed + (UNCHECKED,):
            raise ValueError(f'fabric={fabric!r}: expected one of '
                             f'{", ".join(allowed + (UNCHECKED,))}')
        self.fabric = fabric

    def set_layout(self):
        gpus = self.partition_extra('gpus_per_node', 0)
        # Also guards partitions that carry 'gpu' without a GPU count.
        self.skip_if(not gpus, f'{self.current_partition.fullname} declares '
                     'no gpus_per_node')
        ranks_per_node = gpus // self.gpus_per_rank
        self.num_tasks_per_node = ranks_per_node
        self.num_tasks = self.node_count() * ranks_per_node
        # --gres=gpu:N through the partition's _rfm_gpu resource
        self.num_gpus_per_node = gpus
        self.parser_options = {
            'expected_ranks': self.num_tasks * self.gpus_per_rank,
            'fabric': None if self.expected_fabric() == UNCHECKED
            else self.expected_fabric()}

    def set_environment(self):
        multinode = (self.partition_extra('nccl_env_multinode', {})
                     if self.multinode else {})
        env = {**BASE_ENV, **self.recipe_env(), **multinode, **self.nccl_env}
        if self.nccl_tests_dir:
            env['PATH'] = f'{self.nccl_tests_dir}:$PATH'
        self.env_vars.update(env)

    @run_before('run')
    def write_the_command(self):
        self.choose_topo_file()
        self.set_command_line()

    def choose_topo_file(self):
        candidates = self.partition_extra('nccl_topo_files', [])
        if 'NCCL_TOPO_FILE' in self.env_vars or not candidates:
            self.nccl_topo_file = self.env_vars.get('NCCL_TOPO_FILE', '')
            return
        self.prerun_cmds.append(choose_topo_file_command(candidates))
        self.keep_files.append(TOPO_FILE_RECORD)

    @run_after('run')
    def read_topo_file(self):
        try:
            with open(os.path.join(self.stagedir, TOPO_FILE_RECORD)) as fp:
                self.nccl_topo_file = fp.read(4096).strip()
            self.nccl_topo_file_recorded = True
        except OSError:
            pass

    def set_command_line(self):
        if self.cpu_bind:
            launch.add_options(self.job, launch.binding_options(
                self.job.launcher.registered_name, self.cpu_bind))
        options = [
            '-b', self.min_bytes, '-e', self.max_bytes,
            '-f', str(self.step_factor), '-g', str(self.gpus_per_rank),
        ] + self.extra_options
        binding = self.gpu_order()
        if binding:
            # inside the step: srun --gres would overwrite an export
            self.executable = 'env'
            options = [f'CUDA_VISIBLE_DEVICES={binding}',
                       self.tool_binary] + options
        self.executable_opts = options

@rfm.simple_test
class NcclSingleNode(NcclBase):
    descr = 'nccl-tests on one GPU VM, one rank per GPU'
    # one run per node: a batch of nodes is one job (fan_out_results.py)
    fans_out = True


@rfm.simple_test
class NcclHealthCheckAllReduce(NcclBase):
    """all_reduce on one VM as azurehpc-health-checks runs it (commit
    0e0a1ac, customTests/azure_nccl_allreduce.nhc): `all_reduce_perf -b S
    -e S -f 2 -g 1 -c 1` at the size of the SKU's conf, `-x
    NCCL_TOPO_FILE=` (the conf's topology file argument is not used), its
    -x variables only (extras['nccl_env_azhc']), no CUDA_VISIBLE_DEVICES,
    one rank per GPU bound to its NUMA domain; its "# Avg bus bandwidth"
    (avg_busbw) is what the conf's floor judges. On a SKU the health
    checks give no floor (checks/references/nccl.yaml, azhc) it runs the
    same way at max_bytes, without a verdict."""
    descr = ('nccl-tests all_reduce at one size, as azurehpc-health-checks '
             'runs it where its floors judge')
    fans_out = True
    collective = parameter(['all_reduce'])

    #: The reference entry whose method and floor this check follows.
    HEALTH_CHECK_ENTRY = 'azhc'
    #: The script's -x variables beside extras['nccl_env_azhc'].
    HEALTH_CHECK_ENV = {'NCCL_TOPO_FILE': ''}
    #: Skip where the entry is missing (the health checks do not run it).
    ONLY_WITH_FLOOR = False

    def recipe_env(self) -> dict:
        return self.partition_extra('nccl_env_azhc', {})

    def gpu_order(self) -> str:
        return self.gpu_binding

    def follow_the_method(self):
        entry = references.entries(self.reference_family, self.vm_sku()).get(
            self.HEALTH_CHECK_ENTRY) or {}
        self.skip_if(self.ONLY_WITH_FLOOR and not entry,
                     f'{self.vm_sku()}: azurehpc-health-checks run the NCCL '
                     'IB loopback test on ND A100 v4 only (no '
                     f'{self.HEALTH_CHECK_ENTRY} floor in '
                     'checks/references/nccl.yaml)')
        size = (entry.get('method') or {}).get('size') or self.max_bytes
        self.min_bytes = self.max_bytes = size
        self.step_factor = 2
        self.extra_options = [*self.extra_options, '-c', '1']
        for name, value in self.HEALTH_CHECK_ENV.items():
            self.env_vars.setdefault(name, value)


@rfm.simple_test
class NcclHealthCheckIbLoopback(NcclHealthCheckAllReduce):
    """customTests/azure_nccl_allreduce_ib_loopback.nhc, which the ND A100
    v4 confs run (`check_nccl_allreduce_ib_loopback 18.0 1 <8G|16G>
    <ndv4-topo.xml>`): the same all_reduce with NCCL's shared-memory and
    GPU peer-to-peer transports off and GPUDirect RDMA at any distance, so
    that every GPU's data leaves through its InfiniBand HCA and comes back
    on the same VM. Unlike azure_nccl_allreduce.nhc this script does use
    the conf's topology file: the image's ndv4-topo.xml, chosen here from
    extras['nccl_topo_files'] as the sweep does (the key's topo_file
    'image'). NCCL's log must show every channel over InfiniBand with
    GPUDirect RDMA and none inside the VM (fabric 'ib' on one VM). Skips on
    SKUs without the health checks' floor (checks/references/nccl.yaml,
    azhc_ib_loopback): they run it on ND A100 v4 only."""
    descr = ('nccl-tests all_reduce on one VM through its InfiniBand HCAs, '
             'as azurehpc-health-checks runs it on ND A100 v4')

    HEALTH_CHECK_ENTRY = 'azhc_ib_loopback'
    HEALTH_CHECK_ENV = {'NCCL_NET_GDR_LEVEL': '5', 'NCCL_SHM_DISABLE': '1',
                        'NCCL_P2P_DISABLE': '1'}
    ONLY_WITH_FLOOR = True

    def expected_fabric(self) -> str:
        return self.fabric or 'ib'

    def allowed_fabrics(self) -> tuple[str, ...]:
        return ('ib',)

    def topo_file_label(self) -> str:
        """'image' for any of the image's files the job found (the key
        the health checks' entry has), else as NcclBase reads it."""
        if (self.nccl_topo_file_recorded and self.nccl_topo_file in
                self.partition_extra('nccl_topo_files', [])
                and 'NCCL_TOPO_FILE' not in self.env_vars):
            return 'image'
        return super().topo_file_label()


@rfm.simple_test
class NcclMultiNode(NcclBase):
    descr = 'nccl-tests across GPU VMs, one rank per GPU'
    recorded_variables = NcclBase.recorded_variables + ['num_nodes']
    num_nodes = 2
    multinode = True

    def node_count(self) -> int:
        return self.num_nodes
