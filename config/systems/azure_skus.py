"""The ReFrame partition of each Azure VM SKU family: its hardware facts
from sku_facts.yaml (with their sources) as partition extras; NCCL's
environment comes from Azure's recipes (nccl_recipes.py); reference values
live in checks/references/*.yaml with their sources.
"""
import copy

from ..results import settings
from . import sku_facts
from .nccl_recipes import RECIPES, nccl_extras

# VMs of one GB200/GB300 NVL72 rack talk over multi-node NVLink (MNNVL):
# what NcclMultiNode must prove there by default (-S fabric=ib for a run
# across racks, over InfiniBand).
_NVL72_MULTINODE = {'nccl_multinode_fabric': 'mnnvl'}

# ReFrame partition name -> description and the extras that are not
# hardware facts (GPU order, the multi-node fabric)
_FAMILIES = {
    'hbv3': {'descr': 'HBv3: AMD EPYC Milan-X, 200 Gb/s HDR InfiniBand'},
    'hbv4': {'descr': 'HBv4: AMD EPYC Genoa-X, 400 Gb/s NDR InfiniBand'},
    'hbv5': {'descr': 'HBv5: custom AMD EPYC Zen4 with HBM, '
                      '4 x 200 Gb/s NDR InfiniBand'},
    'hx': {'descr': 'HX: AMD EPYC Genoa-X, large memory, NDR'},
    'ndv4': {'descr': 'NDv4: 8 x A100 80GB, 8 x 200 Gb/s HDR InfiniBand',
             # GPU order of the seed's NDv4 nccl-tests command line
             'extras': {'gpu_binding': '2,3,0,1,6,7,4,5'}},
    'ndv5': {'descr': 'ND H100 v5: 8 x H100, 8 x 400 Gb/s NDR InfiniBand'},
    'ndh200v5': {'descr': 'ND H200 v5: 8 x H200, 8 x 400 Gb/s NDR '
                          'InfiniBand'},
    'ndgb200v6': {'descr': 'ND GB200 v6: 4 x GB200 (Grace + Blackwell), '
                           'NVLink rack', 'extras': _NVL72_MULTINODE},
    'ndgb300v6': {'descr': 'ND GB300 v6: 4 x GB300 (Grace + Blackwell '
                           'Ultra), NVLink rack', 'extras': _NVL72_MULTINODE},
}


def _family(name: str, vm_sku: str) -> dict:
    """A constrained-core size (its facts name a full_size) is described
    as its full size, with its own core count."""
    full_size = sku_facts.value(vm_sku, 'full_size')
    if name in _FAMILIES or not full_size:
        return _FAMILIES[name]
    full = _FAMILIES[sku_facts.load()[full_size]['partition']['value']]
    cores = sku_facts.value(vm_sku, 'cores_per_node')
    return {**full, 'descr': f"{full['descr']}; {cores} of its cores"}


def _sku(name):
    vm_sku = sku_facts.by_partition()[name]
    family = _family(name, vm_sku)
    extras = {**sku_facts.extras(vm_sku), **family.get('extras', {})}
    return {'descr': family['descr'], 'extras': extras}


SKUS = {name: _sku(name) for name in sku_facts.by_partition()}


def sku_partition(name, *, scheduler, launcher, access, max_jobs,
                  extra_extras=None, descr_suffix=''):
    """A ReFrame partition of the SKU family ``name``: its extras (with the
    site's shared filesystem and local NVMe), CPUs, and GPUs as devices and
    a gres resource where it has some."""
    sku = SKUS[name]
    extras = copy.deepcopy(sku['extras'])
    if name in RECIPES:
        extras.update(nccl_extras(name))
    extras.setdefault('shared_fs', settings.shared_fs())
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
    gpus = extras.get('gpus_per_node')
    if gpus:
        partition['features'] = ['gpu']
        partition['devices'] = [{'type': 'gpu', 'arch': extras['gpu_arch'],
                                 'num_devices': gpus}]
        # ReFrame maps a test's num_gpus_per_node to this resource name.
        partition['resources'] = [
            {'name': '_rfm_gpu',
             'options': ['--gres=gpu:{num_gpus_per_node}']}
        ]
    return partition
