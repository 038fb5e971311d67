"""NCCL's environment on each ND SKU family, as Azure's own recipes set it;
every variable names the public recipe it comes from.

These become a GPU partition's ``extras['nccl_env']`` and are set by the
nccl-tests check only (checks/gpu/nccl.py), never as partition environment:
the UCX pair of the health checks moves MPI's bootstrap of NCCL jobs to TCP
over eth0, which OSU or HPL would then measure.

The topology file is not a fixed value: ``extras['nccl_topo_files']`` lists
the known paths and the job takes the first that exists (the image links
``/opt/microsoft/ndv5/topo.xml`` to ``/opt/microsoft/ndv5-topo.xml``; older
images have only the second), recording which.
"""
from __future__ import annotations

# The recipes, by repository, path and commit (open them on GitHub).
AZHPC_IMAGE_NDV5 = ('Azure/azhpc-images components/customizations/ndv5.sh '
                    '@ 8e9d055fb9e1f7385da734969793861c447958a1 '
                    '(/etc/nccl.conf of the ND v5 image)')
AZHPC_IMAGE_NDV4 = ('Azure/azhpc-images components/customizations/ndv4.sh '
                    '@ 8e9d055fb9e1f7385da734969793861c447958a1 '
                    '(/etc/nccl.conf of the ND A100 v4 image)')
AZHC_NCCL = ('Azure/azurehpc-health-checks customTests/'
             'azure_nccl_allreduce.nhc @ '
             '0e0a1ac26a64b32ac4dd7632a529638505d3314a (mpirun -x ...)')
AIOA_HOPPER = ('Azure/ai-infrastructure-on-azure infrastructure_validations/'
               'slurm/NCCL/configs/hopper.conf @ '
               'a01b07318f46edfcf2ff8889a867a15e45dc83b3')
AIOA_GRACE_BLACKWELL = ('Azure/ai-infrastructure-on-azure '
                        'infrastructure_validations/slurm/NCCL/configs/'
                        'graceblackwell.conf @ '
                        'a01b07318f46edfcf2ff8889a867a15e45dc83b3')

# What the health checks pass to every NCCL job on ND VMs.
_AZHC = {
    'NCCL_IB_PCI_RELAXED_ORDERING': ('1', AZHC_NCCL),
    'CUDA_DEVICE_ORDER': ('PCI_BUS_ID', AZHC_NCCL),
    'NCCL_SOCKET_IFNAME': ('eth0', AZHC_NCCL),
}
# ... and for the MPI bootstrap of those jobs only.
_AZHC_BOOTSTRAP = {
    'UCX_IB_PCI_RELAXED_ORDERING': ('on', AZHC_NCCL),
    'UCX_TLS': ('tcp', AZHC_NCCL),
    'UCX_NET_DEVICES': ('eth0', AZHC_NCCL),
}

_HOPPER = {
    **_AZHC, **_AZHC_BOOTSTRAP,
    'NCCL_IGNORE_CPU_AFFINITY': ('1', AZHPC_IMAGE_NDV5),
    'NCCL_MIN_NCHANNELS': ('32', AIOA_HOPPER),
    'NCCL_P2P_NET_CHUNKSIZE': (str(2 * 1024 * 1024), AIOA_HOPPER),
    'NCCL_IB_QPS_PER_CONNECTION': ('4', AIOA_HOPPER),
    'NCCL_PXN_DISABLE': ('1', AIOA_HOPPER),
}
# Across VMs the Hopper recipe also turns on SHARP (CollNet).
_HOPPER_MULTINODE = {
    'NCCL_COLLNET_ENABLE': ('1', AIOA_HOPPER),
    'SHARP_SMX_UCX_INTERFACE': ('mlx5_ib0:1', AIOA_HOPPER),
    'SHARP_COLL_ENABLE_SAT': ('1', AIOA_HOPPER),
    'SHARP_COLL_ENABLE_PCI_RELAXED_ORDERING': ('1', AIOA_HOPPER),
}

_NDV4 = {
    **_AZHC, **_AZHC_BOOTSTRAP,
    'NCCL_IGNORE_CPU_AFFINITY': ('1', AZHPC_IMAGE_NDV4),
}

# GB200/GB300: MNNVL inside the NVL72 rack, InfiniBand across racks. Its
# UCX device is the HCA (not the health checks' TCP pair).
_GRACE_BLACKWELL = {
    'NCCL_SOCKET_IFNAME': ('eth0', AIOA_GRACE_BLACKWELL),
    'NCCL_IGNORE_CPU_AFFINITY': ('1', AIOA_GRACE_BLACKWELL),
    'CUDA_DEVICE_ORDER': ('PCI_BUS_ID', AIOA_GRACE_BLACKWELL),
    'NCCL_IB_PCI_RELAXED_ORDERING': ('1', AZHC_NCCL),
    'LD_LIBRARY_PATH': ('/usr/local/nccl-rdma-sharp-plugins/lib:'
                        '${LD_LIBRARY_PATH:-}', AIOA_GRACE_BLACKWELL),
    'NCCL_MNNVL_ENABLE': ('1', AIOA_GRACE_BLACKWELL),
    'NCCL_NVLS_ENABLE': ('1', AIOA_GRACE_BLACKWELL),
    'NCCL_SHM_DISABLE': ('1', AIOA_GRACE_BLACKWELL),
    'NCCL_DMABUF_ENABLE': ('1', AIOA_GRACE_BLACKWELL),
    'NCCL_P2P_DISABLE': ('0', AIOA_GRACE_BLACKWELL),
    'NCCL_P2P_NET_CHUNKSIZE': (str(2 * 1024 * 1024), AIOA_GRACE_BLACKWELL),
    'NCCL_IB_QPS_PER_CONNECTION': ('4', AIOA_GRACE_BLACKWELL),
    'NCCL_IB_DISABLE': ('0', AIOA_GRACE_BLACKWELL),
    'NCCL_IB_SL': ('1', AIOA_GRACE_BLACKWELL),
    'NCCL_NET_GDR_LEVEL': ('PHB', AIOA_GRACE_BLACKWELL),
    'NCCL_NET_GDR_C2C': ('1', AIOA_GRACE_BLACKWELL),
    'UCX_NET_DEVICES': ('mlx5_ib0:1', AIOA_GRACE_BLACKWELL),
    'MELLANOX_VISIBLE_DEVICES': ('all', AIOA_GRACE_BLACKWELL),
}

# What azure_nccl_allreduce.nhc itself sets (-x ...), for the check that
# follows its method (checks/gpu/nccl.py, NcclHealthCheckAllReduce): the
# recipes' tuning of the families above is not part of it.
AZHC_METHOD = {**_AZHC, **_AZHC_BOOTSTRAP}

# family -> (every run, across VMs only, topology files to try in order)
RECIPES = {
    'ndv4': (_NDV4, {}, ['/opt/microsoft/ndv4/topo.xml',
                         '/opt/microsoft/ndv4-topo.xml']),
    'ndv5': (_HOPPER, _HOPPER_MULTINODE, ['/opt/microsoft/ndv5/topo.xml',
                                          '/opt/microsoft/ndv5-topo.xml']),
    'ndh200v5': (_HOPPER, _HOPPER_MULTINODE,
                 ['/opt/microsoft/ndv5/topo.xml',
                  '/opt/microsoft/ndv5-topo.xml']),
    'ndgb200v6': (_GRACE_BLACKWELL, {}, []),
    'ndgb300v6': (_GRACE_BLACKWELL, {}, []),
}


def nccl_extras(family: str) -> dict:
    """The partition extras of one family's NCCL environment."""
    every, multinode, topo_files = RECIPES[family]
    return {
        'nccl_env': {name: value for name, (value, _) in every.items()},
        'nccl_env_multinode': {name: value
                               for name, (value, _) in multinode.items()},
        'nccl_env_sources': {name: source for name, (_, source)
                             in {**every, **multinode}.items()},
        'nccl_topo_files': list(topo_files),
        'nccl_env_azhc': {name: value
                          for name, (value, _) in AZHC_METHOD.items()},
    }
