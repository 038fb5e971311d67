"""Azure CycleCloud Workspace for Slurm: one partition per VM SKU family.

Selected on hosts matching CLUSTERPROOF_AZURE_HOSTNAMES (comma-separated
regexes; default: CycleCloud Workspace for Slurm node names ``ccw-...``) or
with ``--system azure``. ``azure`` polls accounting (``sacct``); use
``--system azure-squeue`` on clusters without slurmdbd.

CLUSTERPROOF_AZURE_PARTITIONS restricts and maps partitions, e.g.
``hbv4=hpc,ndv5=gpu`` (ReFrame name = Slurm partition); by default every SKU
family is declared with a Slurm partition of the same name.
"""
import os

from .azure_skus import SKUS, sku_partition
from .modules import modules_system
from ..results.settings import SettingError

LAUNCHER_OPTIONS = ['--mpi=pmix']


def _selected_partitions():
    spec = os.environ.get('CLUSTERPROOF_AZURE_PARTITIONS', '').strip()
    if not spec:
        return {name: name for name in SKUS}
    chosen = {}
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
        chosen[name] = slurm_name or name
    return chosen


def _partition(name, slurm_name, scheduler):
    return sku_partition(
        name, scheduler=scheduler, launcher='srun',
        access=[f'--partition={slurm_name}', '--exclusive'], max_jobs=16,
        extra_extras={'launcher_options': list(LAUNCHER_OPTIONS)})


def _hostnames():
    spec = os.environ.get('CLUSTERPROOF_AZURE_HOSTNAMES', r'^ccw-')
    return [pattern.strip() for pattern in spec.split(',') if pattern.strip()]


def _system(name, scheduler, hostnames):
    return {
        'name': name,
        'descr': 'Azure CycleCloud Workspace for Slurm '
                 f'(scheduler {scheduler})',
        'hostnames': hostnames,
        'modules_system': modules_system(),
        'partitions': [_partition(part, slurm_name, scheduler)
                       for part, slurm_name in _selected_partitions().items()],
    }


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
