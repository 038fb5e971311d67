"""The node's fingerprint: what software and firmware a row was measured on.

From the before-sample's 'fingerprint' section (checks/common/
node_probe.sh), its InfiniBand firmware and GPU XML, the Hyper-V KVP
pool the sampler copied, and the NCCL log of an nccl-tests run. Keys are the
results table's fingerprint columns (bicep/results_schema.json)."""
from __future__ import annotations

import json
import re

from . import gpu, infiniband
from .dump import Dump

COLUMNS = ('kernel_version', 'os_image', 'gpu_driver_version',
           'cuda_version', 'nccl_version', 'mpi_version', 'ofed_version',
           'hca_firmware', 'gpu_vbios', 'physical_host')

# Hyper-V data exchange (KVP) pool files: records of a 512-byte key and a
# 2048-byte value, NUL-padded (Linux hv_kvp_daemon:
# HV_KVP_EXCHANGE_MAX_KEY_SIZE and HV_KVP_EXCHANGE_MAX_VALUE_SIZE of
# include/uapi/linux/hyperv.h). Pool 3
# holds what the host gives every guest: HostName, PhysicalHostName,
# PhysicalHostNameFullyQualified, VirtualMachineName (Microsoft Learn,
# "Data Exchange: Using key-value pairs to share information between the
# host and guest on Hyper-V").
KVP_KEY_BYTES, KVP_VALUE_BYTES = 512, 2048
PHYSICAL_HOST_KEYS = ('PhysicalHostNameFullyQualified', 'PhysicalHostName')
_NCCL_VERSION = re.compile(r'NCCL version (\S+)')
_OPEN_MPI = re.compile(r'\(Open MPI\)\s+(\S+)')


def kvp_pairs(data: bytes) -> dict[str, str]:
    """Key/value records of one KVP pool file."""
    size = KVP_KEY_BYTES + KVP_VALUE_BYTES
    pairs = {}
    for start in range(0, len(data) - size + 1, size):
        key = data[start:start + KVP_KEY_BYTES].split(b'\0', 1)[0]
        value = data[start + KVP_KEY_BYTES:start + size].split(b'\0', 1)[0]
        if key:
            pairs[key.decode(errors='replace')] = value.decode(
                errors='replace')
    return pairs


def physical_host(kvp: bytes | None) -> str | None:
    pairs = kvp_pairs(kvp or b'')
    return next((pairs[k] for k in PHYSICAL_HOST_KEYS if pairs.get(k)), None)


def nccl_version(text: str) -> str | None:
    """'2.21.5+cuda12.4' of NCCL's 'NCCL version 2.21.5+cuda12.4' line."""
    match = _NCCL_VERSION.search(text)
    return match.group(1) if match else None


def _fields(lines: list[str]) -> dict[str, str]:
    fields = {}
    for line in lines:
        key, sep, value = line.partition('=')
        if sep and value.strip():
            fields[key.strip()] = value.strip()
    return fields


def _os_image(fields: dict[str, str]) -> str | None:
    """The Azure HPC image version (/opt/azurehpc/component_versions.txt,
    JSON, 'ImageVersion') where present, else the OS's PRETTY_NAME."""
    try:
        versions = json.loads(fields.get('component_versions', ''))
    except ValueError:
        versions = {}
    image = versions.get('ImageVersion') if isinstance(versions, dict) \
        else None
    return image or fields.get('os_release')


def _mpi(fields: dict[str, str]) -> str | None:
    hpcx = fields.get('hpcx_dir', '').rstrip('/').rsplit('/', 1)[-1]
    if hpcx:
        return hpcx
    match = _OPEN_MPI.search(fields.get('mpirun', ''))
    return f'Open MPI {match.group(1)}' if match else \
        fields.get('mpirun') or None


def _distinct(values) -> str | None:
    found = sorted({v for v in values if v})
    return ','.join(found) if found else None


def of_node(before: Dump, kvp: bytes | None = None) -> dict[str, str | None]:
    """The fingerprint columns of one node (None where not known)."""
    fields = _fields(before.lines('fingerprint'))
    ib = infiniband.parse(before.lines('infiniband'))
    try:
        gpus = gpu.parse(before.text('nvidia-smi')) \
            if before.lines('nvidia-smi') else gpu.Sample()
    except ValueError:
        gpus = gpu.Sample()
    ofed = fields.get('ofed_info', '').rstrip(':') or None
    return {
        'kernel_version': fields.get('kernel_version'),
        'os_image': _os_image(fields),
        'gpu_driver_version': gpus.driver_version,
        'cuda_version': gpus.cuda_version,
        'nccl_version': None,
        'mpi_version': _mpi(fields),
        'ofed_version': ofed,
        'hca_firmware': _distinct(ib.firmware.values()),
        'gpu_vbios': _distinct(g.vbios for g in gpus.gpus),
        'physical_host': physical_host(kvp),
    }


def of_rows(per_node: dict[str, dict], nodes: list[str]) -> dict:
    """The fingerprint of a row over several nodes: each column's value
    where they agree, else their distinct values joined by ','."""
    merged = {}
    for column in COLUMNS:
        values = [per_node.get(n, {}).get(column) for n in nodes]
        merged[column] = _distinct(values)
    return merged
