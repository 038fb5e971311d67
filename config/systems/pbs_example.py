"""An example PBS Pro / OpenPBS cluster, for sites moving between PBS and
Slurm: same checks, same partitions' extras, another scheduler.

Copy and adapt: queue names, hostnames and the MPI environment are the
site's. Selected with ``--system pbs-example``.
"""
from .azure_skus import sku_partition
from .modules import modules_system


def _queue(name):
    return sku_partition(name, scheduler='pbs', launcher='mpirun',
                         access=[f'-q {name}', '-l place=excl'], max_jobs=8,
                         descr_suffix=' (PBS queue)')


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
