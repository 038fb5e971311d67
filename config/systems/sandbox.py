"""The five-node Slurm sandbox of `scripts/clusterproof sandbox start`.

Never picked by hostname: select it with ``--system sandbox`` (or RFM_SYSTEM)
after ``source <sandbox dir>/env``. Partitions mirror the sandbox's Slurm
partitions, named like the Azure SKU families they stand in for; both hold the
same five CPU-only nodes (sb-n1 to sb-n5, 2 cores each) on this one host.
``hbv4-squeue`` is the same Slurm partition polled with squeue instead of sacct.
"""
import os

from ..results import settings
from . import sku_facts

# Same default as scripts/cli/sandbox.py; `source <dir>/env` exports the variable.
SANDBOX_DIR = str(settings.sandbox_dir())

# Jobs run as root and both nodes are one host: Open MPI must accept root and
# use TCP over loopback. The sandbox's TaskProlog sets the same variables for
# every task; declaring them here keeps ReFrame's job scripts self-explaining.
OPEN_MPI_ENV = [
    ['OMPI_ALLOW_RUN_AS_ROOT', '1'],
    ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1'],
    ['OMPI_MCA_pml', 'ob1'],
    ['OMPI_MCA_btl', 'self,vader,tcp'],
    ['OMPI_MCA_btl_tcp_if_include', 'lo'],
    ['OMPI_MCA_oob_tcp_if_include', 'lo'],
    ['OMPI_MCA_btl_vader_single_copy_mechanism', 'none'],
]

# The VM SKUs the sandbox's partitions stand in for (their references
# apply; their hardware facts do not: the nodes are this machine's)
_SKU_OF = sku_facts.by_partition()
CORES_PER_NODE = 2  # what scripts/cli/sandbox.py declares for each node
# Pretend GPUs for the GPU checks' replay stand-ins (tests/support/standins):
# CLUSTERPROOF_SANDBOX_GPUS=N gives ndv5 the 'gpu' feature and N GPUs per
# node. No GRES is declared: Slurm here has no GPU to hand out.
PRETEND_GPUS = settings.sandbox_gpus()
MEMORY_GIB = 1      # its RealMemory (1024 MB)


def _partition(name, slurm_partition, scheduler, vm_sku, descr):
    return {
        'name': name,
        'descr': descr,
        'scheduler': scheduler,
        'launcher': 'srun',
        'access': [f'--partition={slurm_partition}'],
        'environs': ['builtin', 'openmpi'],
        'max_jobs': 5,
        'processor': {'num_cpus': CORES_PER_NODE},
        'env_vars': [list(pair) for pair in OPEN_MPI_ENV],
        'features': ['cpu'],
        'extras': {
            'vm_sku': vm_sku,
            'cores_per_node': CORES_PER_NODE,
            'memory_gib': MEMORY_GIB,
            # Five nodes share this host's cores: a memory-sized HPCC takes
            # longer than its time limit here (-S size_profile=full for it).
            'size_profile': 'smoke',
            # ... and slow each other unevenly when measured together (five
            # HPCC runs at once: 3 of 5 healthy nodes below their peers), so
            # a node check's batch job measures one node after the other
            # (checks/common/fan_out.py, AT_ONCE), and acceptance's
            # confirmations run their jobs one by one (confirm.py). Five
            # one-node jobs of --node-batch 1 may still run together.
            'nodes_measured_at_once': 1,
            'shared_fs': os.path.join(SANDBOX_DIR, 'shared'),
            'local_nvme': os.path.join(SANDBOX_DIR, 'local'),
            # MpiDefault=pmix already; stated so job scripts match Azure's.
            'launcher_options': ['--mpi=pmix'],
            # Only when set: a loopback stand-in of the metadata service.
            'vm_size_url': settings.imds_url(),
        },
    }


system = {
    'name': 'sandbox',
    'descr': 'Local five-node Slurm sandbox (scripts/clusterproof sandbox)',
    'hostnames': ['^clusterproof-sandbox$'],
    'modules_system': 'nomod',
    'partitions': [
        _partition('hbv4', 'hbv4', 'slurm', _SKU_OF['hbv4'],
                   'Sandbox partition hbv4 (accounting: sacct)'),
        _partition('hbv4-squeue', 'hbv4', 'squeue', _SKU_OF['hbv4'],
                   'Sandbox partition hbv4 polled with squeue'),
        # CPU-only nodes standing in for ND H100 v5: no GPU, no InfiniBand.
        _partition('ndv5', 'ndv5', 'slurm', _SKU_OF['ndv5'],
                   'Sandbox partition ndv5 (CPU-only stand-in)'),
    ],
}
if PRETEND_GPUS:
    _ndv5 = system['partitions'][-1]
    _ndv5['features'] = ['gpu']
    _ndv5['extras']['gpus_per_node'] = PRETEND_GPUS
