"""Azure CycleCloud Workspace for Slurm: one partition per VM SKU family.

Selected on hosts matching CLUSTERPROOF_AZURE_HOSTNAMES (comma-separated
regexes; default: CycleCloud Workspace for Slurm node names ``ccw-...``) or
with ``--system azure``. ``azure`` polls accounting (``sacct``); use
``--system azure-squeue`` on clusters without slurmdbd.

Which Slurm partition is which SKU family, first found wins:
1. CLUSTERPROOF_AZURE_PARTITIONS, e.g. ``hbv4=hpc,ndv5=gpu`` (ReFrame name =
   Slurm partition);
2. the site file `clusterproof discover` wrote
   (``$CLUSTERPROOF_HOME/site-partitions.yaml``, config/systems/site_file.py);
3. on a host this system's hostname patterns match, with Slurm: the same
   discovery from ``sinfo``, in memory (nothing written, no node started);
4. every SKU family with a Slurm partition of the same name.
"""
import re
import socket

from . import discovery, site_file
from .azure_skus import SKUS, sku_partition
from .modules import modules_system
from ..results import settings
from ..results.settings import SettingError

LAUNCHER_OPTIONS = ['--mpi=pmix']

# Where a job asks the VM size of its node (checks/common/vm_size.py): the
# Azure Instance Metadata Service, or CLUSTERPROOF_IMDS_URL (``%n`` = node).
IMDS_VM_SIZE_URL = ('http://169.254.169.254/metadata/instance/compute/vmSize'
                    '?api-version=2021-02-01&format=text')


def vm_size_url():
    return settings.imds_url() or IMDS_VM_SIZE_URL


def _from_environment(spec):
    chosen = []
    for item in spec.split(','):
        name, equals, slurm_name = (part.strip() for part in
                                    item.strip().partition('='))
        if name not in SKUS or (equals and not slurm_name):
            what = (f'unknown partition {name!r}' if name not in SKUS else
                    f'{item.strip()!r} names no Slurm partition after =')
            # Never fall back to partitions that may not exist: stop.
            raise SettingError(
                f'CLUSTERPROOF_AZURE_PARTITIONS={spec!r}: {what}; write '
                f'NAME[=SLURM_PARTITION],... with NAME among '
                f'{", ".join(SKUS)}')
        chosen.append((name, name, slurm_name or name))
    return chosen


def _on_this_cluster():
    host = socket.gethostname()
    return any(re.match(pattern, host) for pattern in _hostnames())


def _discovered_now():
    """Discovery in memory on a cluster host with nothing configured."""
    if not _on_this_cluster():
        return None
    try:
        return site_file.entries_of(discovery.discover(timeout=10)) or None
    except discovery.DiscoveryError:
        return None


def _selected_partitions():
    """[(ReFrame partition, SKU family, Slurm partition)], by precedence."""
    spec = settings.azure_partitions()
    if spec:
        return _from_environment(spec)
    return (site_file.load() or _discovered_now()
            or [(name, name, name) for name in SKUS])


def _partition(name, family, slurm_name, scheduler):
    partition = sku_partition(
        family, scheduler=scheduler, launcher='srun',
        access=[f'--partition={slurm_name}', '--exclusive'], max_jobs=16,
        extra_extras={'launcher_options': list(LAUNCHER_OPTIONS),
                      'vm_size_url': vm_size_url()})
    partition['name'] = name
    return partition


def _hostnames():
    return settings.azure_hostnames()


def _system(name, scheduler, hostnames):
    return {
        'name': name,
        'descr': 'Azure CycleCloud Workspace for Slurm '
                 f'(scheduler {scheduler})',
        'hostnames': hostnames,
        'modules_system': modules_system(),
        'partitions': [_partition(*chosen, scheduler)
                       for chosen in _SELECTED],
    }


_SELECTED = _selected_partitions()

systems = [
    _system('azure', 'slurm', _hostnames()),
    # Never picked by hostname: ask for it with --system azure-squeue.
    _system('azure-squeue', 'squeue', ['^$']),
]

environments = [
    # HPC-X from the Azure HPC images (module mpi/hpcx); CUDA on ND images.
    {'name': 'hpcx', 'modules': ['mpi/hpcx'], 'cc': 'mpicc',
     'cxx': 'mpicxx', 'ftn': 'mpif90', 'features': ['mpi', 'openmp'],
     'target_systems': ['azure', 'azure-squeue']},
]
