"""The one reader of clusterproof's settings (CLUSTERPROOF_* environment
variables) for the configuration and the command line.

Each setting is a function here, named for what it gives, with its variable
and default beside it. A tuning setting has a safe default: a value that is
not a finite number in its range gives one warning naming the variable, the
value and the default used, and the run goes on with the default. A setting
without a safe default (CLUSTERPROOF_HOME that is a file,
CLUSTERPROOF_AZURE_PARTITIONS malformed) raises SettingError where it is
used: one line, and the command stops (ReFrame reports an OSError raised
by its configuration in one line).

The checks read their own few (CLUSTERPROOF_REFERENCES, _BASELINES,
_CLUSTER, _PROGRESS_S in checks/common): ReFrame imports checks/ and
config/ as two packages under names of its own, so neither imports the
other.
"""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

_warned: set[str] = set()

HOME = 'CLUSTERPROOF_HOME'
CLUSTER = 'CLUSTERPROOF_CLUSTER'
REFRAME_LOG_LEVEL = 'CLUSTERPROOF_REFRAME_LOG_LEVEL'
FLUSH_TIMEOUT = 'CLUSTERPROOF_FLUSH_TIMEOUT'
IMDS_URL = 'CLUSTERPROOF_IMDS_URL'
AZURE_PARTITIONS = 'CLUSTERPROOF_AZURE_PARTITIONS'
AZURE_HOSTNAMES = 'CLUSTERPROOF_AZURE_HOSTNAMES'
MODULES_SYSTEM = 'CLUSTERPROOF_MODULES_SYSTEM'
SHARED_FS = 'CLUSTERPROOF_SHARED_FS'
SANDBOX_DIR = 'CLUSTERPROOF_SANDBOX_DIR'
SANDBOX_GPUS = 'CLUSTERPROOF_SANDBOX_GPUS'
# Guest Health Reporting (scripts/guest_health)
IMDS_COMPUTE_URL = 'CLUSTERPROOF_IMDS_COMPUTE_URL'
KVP_POOL = 'CLUSTERPROOF_KVP_POOL'
ARM_ENDPOINT = 'CLUSTERPROOF_ARM_ENDPOINT'
ARM_SCOPE = 'CLUSTERPROOF_ARM_SCOPE'
IMPACT_API_VERSION = 'CLUSTERPROOF_IMPACT_API_VERSION'
GHR_SUBSCRIPTION = 'CLUSTERPROOF_GHR_SUBSCRIPTION'
GHR_BACKOFF = 'CLUSTERPROOF_GHR_BACKOFF_S'

#: ReFrame's log file level by default: 'verbose', because ReFrame fills
#: every record it logs with the test's attributes, its deprecated
#: ``variables`` alias among them, and that costs a walk of the whole stack
#: (README "Acceptance at scale"): its debug records were two thirds of a
#: 1,000-node plan's dry run.
DEFAULT_REFRAME_LOG_LEVEL = 'verbose'
DEFAULT_FLUSH_TIMEOUT_S = 30.0
DEFAULT_AZURE_HOSTNAMES = r'^ccw-'
DEFAULT_SHARED_FS = '/shared/scratch'


class SettingError(OSError):
    """A setting with no safe default is wrong; the message says how."""


def _text(name: str) -> str:
    return os.environ.get(name, '').strip()


def seconds(name: str, default: float, maximum: float = 7 * 86400) -> float:
    """A number of seconds from 0 to maximum, else the default (warned)."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and 0 <= value <= maximum:
        return value
    if name not in _warned:
        _warned.add(name)
        print(f'clusterproof: WARNING: {name}={text!r} is not a number of '
              f'seconds from 0 to {maximum:g}; using the default {default:g}',
              file=sys.stderr, flush=True)
    return default


# -- the local store --------------------------------------------------------
def home() -> Path:
    """Where the store, the ledgers, the logs and the runs live
    (CLUSTERPROOF_HOME, default ~/.clusterproof)."""
    return Path(os.environ.get(HOME) or Path.home() / '.clusterproof')


def home_is_set() -> bool:
    return bool(os.environ.get(HOME))


def cluster(system: str | None) -> str | None:
    """The cluster a row is stored under: CLUSTERPROOF_CLUSTER, else the
    ReFrame system."""
    return os.environ.get(CLUSTER) or system


# -- ReFrame's logging and the live push ----------------------------------
def reframe_log_level() -> str:
    """ReFrame's log file level (CLUSTERPROOF_REFRAME_LOG_LEVEL, e.g.
    debug)."""
    return os.environ.get(REFRAME_LOG_LEVEL) or DEFAULT_REFRAME_LOG_LEVEL


def flush_timeout() -> float:
    """How long the live push may flush at session end before leaving the
    rest to `clusterproof sync` (CLUSTERPROOF_FLUSH_TIMEOUT, seconds)."""
    return seconds(FLUSH_TIMEOUT, DEFAULT_FLUSH_TIMEOUT_S)


# -- the systems -------------------------------------------------------------
def imds_url() -> str:
    """Where a job asks its node's VM size instead of the Azure Instance
    Metadata Service (CLUSTERPROOF_IMDS_URL, ``%n`` = node); '' = IMDS."""
    return os.environ.get(IMDS_URL, '')


def azure_partitions() -> str:
    """CLUSTERPROOF_AZURE_PARTITIONS, e.g. ``hbv4=hpc,ndv5=gpu``; ''."""
    return _text(AZURE_PARTITIONS)


def azure_hostnames() -> list[str]:
    """The host name patterns of an Azure cluster's login nodes
    (CLUSTERPROOF_AZURE_HOSTNAMES, comma-separated; default ^ccw-)."""
    spec = os.environ.get(AZURE_HOSTNAMES, DEFAULT_AZURE_HOSTNAMES)
    return [pattern.strip() for pattern in spec.split(',') if pattern.strip()]


def modules_system() -> str:
    """ReFrame's modules system (CLUSTERPROOF_MODULES_SYSTEM); '' = chosen
    from the host."""
    return os.environ.get(MODULES_SYSTEM) or ''


def shared_fs() -> str:
    """The shared file system of the Azure partitions
    (CLUSTERPROOF_SHARED_FS)."""
    return os.environ.get(SHARED_FS, DEFAULT_SHARED_FS)


def sandbox_gpus() -> int:
    """Pretend GPUs per node of the sandbox's ndv5, for the GPU checks'
    replay stand-ins (CLUSTERPROOF_SANDBOX_GPUS; 0 = a CPU-only ndv5, as is
    anything but a whole number)."""
    text = _text(SANDBOX_GPUS)
    return int(text) if text.isdigit() and len(text) < 4 else 0


def sandbox_dir() -> Path:
    """The Slurm sandbox's state directory (CLUSTERPROOF_SANDBOX_DIR, else
    $TMPDIR/clusterproof-sandbox)."""
    base = os.environ.get(SANDBOX_DIR)
    if base:
        return Path(base)
    return Path(os.environ.get('TMPDIR') or '/tmp') / 'clusterproof-sandbox'


# -- Guest Health Reporting (scripts/guest_health) ---------------------------
#: IMDS's compute document (learn.microsoft.com/azure/virtual-machines/
#: instance-metadata-service); the Hyper-V KVP pool 3 the host fills
DEFAULT_IMDS_COMPUTE_URL = ('http://169.254.169.254/metadata/instance/'
                            'compute?api-version=2021-02-01&format=json')
DEFAULT_KVP_POOL = '/var/lib/hyperv/.kvp_pool_3'
DEFAULT_ARM_ENDPOINT = 'https://management.azure.com'
DEFAULT_ARM_SCOPE = 'https://management.azure.com/.default'
DEFAULT_GHR_BACKOFF_S = 2.0


def imds_compute_url(node: str) -> str:
    """Where *node* reads its VM id (CLUSTERPROOF_IMDS_COMPUTE_URL, ``%n``
    = node)."""
    return (_text(IMDS_COMPUTE_URL) or DEFAULT_IMDS_COMPUTE_URL).replace(
        '%n', node)


def kvp_pool(node: str) -> str:
    """*node*'s KVP pool 3 file (CLUSTERPROOF_KVP_POOL, ``%n`` = node)."""
    return (_text(KVP_POOL) or DEFAULT_KVP_POOL).replace('%n', node)


def arm_endpoint() -> str:
    """Azure Resource Manager (CLUSTERPROOF_ARM_ENDPOINT)."""
    return (_text(ARM_ENDPOINT) or DEFAULT_ARM_ENDPOINT).rstrip('/')


def arm_scope() -> str:
    """The token scope for ARM (CLUSTERPROOF_ARM_SCOPE)."""
    return _text(ARM_SCOPE) or DEFAULT_ARM_SCOPE


def impact_api_version(default: str) -> str:
    """The Impact Reporting API version (CLUSTERPROOF_IMPACT_API_VERSION),
    else *default*."""
    return _text(IMPACT_API_VERSION) or default


def ghr_subscription() -> str:
    """The subscription Guest Health Reports are made from
    (CLUSTERPROOF_GHR_SUBSCRIPTION); '' = the reported VM's."""
    return _text(GHR_SUBSCRIPTION)


def ghr_backoff() -> float:
    """The first wait before a report is sent again (doubled each time)."""
    return seconds(GHR_BACKOFF, DEFAULT_GHR_BACKOFF_S, 300)
