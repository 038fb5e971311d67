"""The one ReFrame configuration of clusterproof.

    reframe -C config/config.py -c checks -r

merges one module per system family from config/systems/ and the logging of
config/results/handlers/store_handler.py. The system is chosen the ReFrame way: ``--system NAME``,
``RFM_SYSTEM``, or the first system whose hostname patterns match this host;
``local`` (this machine, no scheduler) matches any host, so it comes last.
"""
import os
import sys

from . import reframe_temp_log
from .results.handlers import reframe_logging, store_handler
from .results.store import files as store

# First, so that a configuration this file refuses (below, or a setting a
# system module refuses) leaves no rfm-*.log behind either: the one line
# ReFrame prints says all that log would hold.
reframe_temp_log.remove_at_exit()

# A home that cannot hold the store stops ReFrame here, in one line naming it
# (ReFrame reports an OSError of its configuration so), before the systems
# read their site file from it. ReFrame then names its log files in its
# last line: its first one is let go of, not left behind.
try:
    store.check_home()
    from .systems import azure, local, pbs_example, sandbox  # noqa: E402
except Exception:
    reframe_temp_log.let_go()
    raise

# Order matters: the first hostname match wins and local matches anything.
FAMILIES = [azure, sandbox, pbs_example, local]


def _systems_of(family):
    return getattr(family, 'systems', None) or [family.system]


COMMON_ENVIRONMENTS = [
    {'name': 'openmpi', 'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
     'features': ['mpi', 'openmp'], 'target_systems': ['local', 'sandbox']},
]

def _with_default_prefix(system):
    # ReFrame's stage/ and output/ go under CLUSTERPROOF_HOME, not into the
    # current directory (the checkout), and one directory per session, so
    # that two sessions on one home (two admins, a cron run and a manual
    # one) never share a stage directory; --prefix, RFM_PREFIX, --stage and
    # --outputdir still win.
    return {'prefix': str(store.home() / 'runs' / store_handler.SESSION_ID),
            **system}


site_configuration = {
    'systems': [_with_default_prefix(system) for family in FAMILIES
                for system in _systems_of(family)],
    'environments': [env for family in FAMILIES
                     for env in getattr(family, 'environments', [])]
                    + COMMON_ENVIRONMENTS,
    'logging': reframe_logging.logging_config(),
    'storage': [{
        # ReFrame's own results database: powers --performance-compare.
        'enable': True,
        'sqlite_db_file': str(store.home() / 'reframe-results.db'),
    }],
    'general': [{
        # `-c checks` finds the checks grouped by area in sub-directories.
        'check_search_recursive': True,
        # No colour codes in files, pipes or a dumb terminal (RFM_COLORIZE
        # and --nocolor still decide).
        'colorize': sys.stdout.isatty() and os.environ.get('TERM') != 'dumb',
        'report_file': str(store.home() / 'reports' /
                           'run-report-{sessionid}.json'),
        # ReFrame's processor auto-detection cache (default ~/.reframe/topology)
        'topology_prefix': str(store.home() / 'topology'),
    }],
}
