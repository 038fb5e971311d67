"""This machine, with the local scheduler: the embedded default, picked on
any host that no other system claims."""
import os
import shutil

from ..results.store import files as store


def _root_mpi_env():
    # Open MPI refuses to start as root unless told twice.
    if os.geteuid() != 0:
        return []
    return [['OMPI_ALLOW_RUN_AS_ROOT', '1'],
            ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1']]


system = {
    'name': 'local',
    'descr': 'This machine (no scheduler)',
    'hostnames': ['.*'],
    'modules_system': 'nomod',
    'partitions': [{
        'name': 'default',
        'descr': 'Local processes',
        'scheduler': 'local',
        # mpirun where Open MPI is installed, so MPI checks run for real.
        'launcher': 'mpirun' if shutil.which('mpirun') else 'local',
        'environs': ['builtin', 'openmpi'],
        'max_jobs': 1,
        'processor': {'num_cpus': os.cpu_count() or 1},
        'env_vars': _root_mpi_env() + [
            ['OMPI_MCA_rmaps_base_oversubscribe', '1']],
        'features': ['cpu'],
        'extras': {
            'cores_per_node': os.cpu_count() or 1,
            'shared_fs': str(store.home() / 'scratch'),
            'local_nvme': str(store.home() / 'local'),
        },
    }],
}
