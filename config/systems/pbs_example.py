"""An example PBS Pro / OpenPBS cluster, for sites moving between PBS and
Slurm: same checks, same partitions' extras, another scheduler.

Copy and adapt: queue names, hostnames and the MPI environment are the
site's. Selected with ``--system pbs-example``.
"""
import copy

from .azure_skus import SKUS
from .modules import modules_system


def _queue(name):
    sku = SKUS[name]
    extras = copy.deepcopy(sku['extras'])
    extras.setdefault('shared_fs', '/shared/scratch')
    extras.setdefault('local_nvme', '/mnt/nvme')
    return {
        'name': name,
        'descr': sku['descr'] + ' (PBS queue)',
        'scheduler': 'pbs',
        'launcher': 'mpirun',
        'access': [f'-q {name}', '-l place=excl'],
        'environs': ['hpcx', 'builtin'],
        'max_jobs': 8,
        'processor': {'num_cpus': extras['cores_per_node']},
        'extras': extras,
        'features': ['cpu'],
    }


system = {
    'name': 'pbs-example',
    'descr': 'Example PBS cluster of HBv3 and HBv4 nodes',
    'hostnames': ['^pbs-example-login$'],
    'modules_system': modules_system(),
    'partitions': [_queue('hbv3'), _queue('hbv4')],
}

environments = [
    {'name': 'hpcx', 'modules': ['mpi/hpcx'], 'cc': 'mpicc',
     'cxx': 'mpicxx', 'ftn': 'mpif90', 'features': ['mpi', 'openmp'],
     'target_systems': ['pbs-example']},
]
