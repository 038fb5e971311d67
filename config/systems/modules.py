"""Which environment-modules backend a cluster's login node offers."""
import os


def modules_system() -> str:
    """Environment Modules (the Azure HPC images' ``module``) when this host
    has it, else none, so that listing and --dry-run work anywhere."""
    chosen = os.environ.get('CLUSTERPROOF_MODULES_SYSTEM')
    if chosen:
        return chosen
    return 'envmod' if os.environ.get('MODULESHOME') else 'nomod'
