"""Which environment-modules backend a cluster's login node offers."""
import os

from ..results import settings


def modules_system() -> str:
    """Environment Modules (the Azure HPC images' ``module``) when this host
    has it, else none, so that listing and --dry-run work anywhere."""
    chosen = settings.modules_system()
    if chosen:
        return chosen
    return 'envmod' if os.environ.get('MODULESHOME') else 'nomod'
