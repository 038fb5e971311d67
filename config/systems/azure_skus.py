"""Facts about the Azure VM SKUs the suite targets, as partition extras,
and the ReFrame partition of one SKU family.

Only layout facts live here (cores, GPUs, HCAs, image paths); NCCL's
environment comes from Azure's recipes (nccl_recipes.py); reference values
live in checks/references/*.yaml with their sources.
"""
import copy
import os

from .nccl_recipes import RECIPES, nccl_extras


def _hcas(count):
    return [f'mlx5_ib{i}' for i in range(count)]


# VMs of one GB200/GB300 NVL72 rack talk over multi-node NVLink (MNNVL):
# what NcclMultiNode must prove there by default (-S fabric=ib for a run
# across racks, over InfiniBand).
_NVL72_MULTINODE = {'nccl_multinode_fabric': 'mnnvl'}


# ReFrame partition name -> description and extras
SKUS = {
    'hbv3': {
        'descr': 'HBv3: 120 AMD EPYC Milan-X cores, 200 Gb/s HDR InfiniBand',
        'extras': {'vm_sku': 'Standard_HB120rs_v3', 'cores_per_node': 120,
                   'numa_nodes': 4, 'memory_gib': 448, 'ib_hcas': _hcas(1),
                   'blas_family': 'aocl'},
    },
    'hbv4': {
        'descr': 'HBv4: 176 AMD EPYC Genoa-X cores, 400 Gb/s NDR InfiniBand',
        'extras': {'vm_sku': 'Standard_HB176rs_v4', 'cores_per_node': 176,
                   'numa_nodes': 4, 'memory_gib': 768, 'ib_hcas': _hcas(1),
                   'blas_family': 'aocl'},
    },
    'hbv5': {
        'descr': 'HBv5: 368 custom AMD EPYC Zen4 cores with HBM, '
                 '4 x 200 Gb/s NDR InfiniBand',
        'extras': {'vm_sku': 'Standard_HB368rs_v5', 'cores_per_node': 368,
                   'memory_gib': 432, 'ib_hcas': _hcas(4),
                   'blas_family': 'aocl'},
    },
    'hx': {
        'descr': 'HX: 176 AMD EPYC Genoa-X cores, 1.4 TB memory, NDR',
        'extras': {'vm_sku': 'Standard_HX176rs', 'cores_per_node': 176,
                   'numa_nodes': 4, 'memory_gib': 1408, 'ib_hcas': _hcas(1),
                   'blas_family': 'aocl'},
    },
    'ndv4': {
        'descr': 'NDv4: 8 x A100 80GB, 8 x 200 Gb/s HDR InfiniBand',
        'gpus': 8, 'gpu_arch': 'sm_80',
        'extras': {'vm_sku': 'Standard_ND96amsr_A100_v4',
                   'cores_per_node': 96, 'gpus_per_node': 8,
                   'memory_gib': 1900, 'ib_hcas': _hcas(8),
                   # GPU order of the seed's NDv4 nccl-tests command line
                   'gpu_binding': '2,3,0,1,6,7,4,5'},
    },
    'ndv5': {
        'descr': 'ND H100 v5: 8 x H100, 8 x 400 Gb/s NDR InfiniBand',
        'gpus': 8, 'gpu_arch': 'sm_90',
        'extras': {'vm_sku': 'Standard_ND96isr_H100_v5',
                   'cores_per_node': 96, 'gpus_per_node': 8,
                   'memory_gib': 1900, 'ib_hcas': _hcas(8)},
    },
    'ndh200v5': {
        'descr': 'ND H200 v5: 8 x H200, 8 x 400 Gb/s NDR InfiniBand',
        'gpus': 8, 'gpu_arch': 'sm_90',
        'extras': {'vm_sku': 'Standard_ND96isr_H200_v5',
                   'cores_per_node': 96, 'gpus_per_node': 8,
                   'ib_hcas': _hcas(8)},
    },
    'ndgb200v6': {
        'descr': 'ND GB200 v6: 4 x GB200 (Grace + Blackwell), NVLink rack',
        'gpus': 4, 'gpu_arch': 'sm_100',
        'extras': {'vm_sku': 'Standard_ND128isr_NDR_GB200_v6',
                   'cores_per_node': 128, 'gpus_per_node': 4,
                   'ib_hcas': _hcas(4),
                   **_NVL72_MULTINODE},
    },
    'ndgb300v6': {
        'descr': 'ND GB300 v6: 4 x GB300 (Grace + Blackwell Ultra), '
                 'NVLink rack',
        'gpus': 4, 'gpu_arch': 'sm_103',
        'extras': {'vm_sku': 'Standard_ND128isr_GB300_v6',
                   'cores_per_node': 128, 'gpus_per_node': 4,
                   'ib_hcas': _hcas(4),
                   **_NVL72_MULTINODE},
    },
}


def sku_partition(name, *, scheduler, launcher, access, max_jobs,
                  extra_extras=None, descr_suffix=''):
    """A ReFrame partition of the SKU family ``name``: its extras (with the
    site's shared filesystem and local NVMe), CPUs, and GPUs as devices and
    a gres resource where it has some."""
    sku = SKUS[name]
    extras = copy.deepcopy(sku['extras'])
    if name in RECIPES:
        extras.update(nccl_extras(name))
    extras.setdefault('shared_fs', os.environ.get('CLUSTERPROOF_SHARED_FS',
                                                  '/shared/scratch'))
    extras.setdefault('local_nvme', '/mnt/nvme')
    extras.update(extra_extras or {})
    partition = {
        'name': name,
        'descr': sku['descr'] + descr_suffix,
        'scheduler': scheduler,
        'launcher': launcher,
        'access': access,
        'environs': ['hpcx', 'builtin'],
        'max_jobs': max_jobs,
        'processor': {'num_cpus': extras['cores_per_node']},
        'extras': extras,
        'features': ['cpu'],
    }
    if sku.get('gpus'):
        partition['features'] = ['gpu']
        partition['devices'] = [{'type': 'gpu', 'arch': sku['gpu_arch'],
                                 'num_devices': sku['gpus']}]
        # ReFrame maps a test's num_gpus_per_node to this resource name.
        partition['resources'] = [
            {'name': '_rfm_gpu',
             'options': ['--gres=gpu:{num_gpus_per_node}']}
        ]
    return partition
