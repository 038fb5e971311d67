"""The NVLink fabric of a node, from the ``Fabric`` sections of
``nvidia-smi -q`` (one per GPU): which NVLink domain it belongs to, and what
is wrong with it.

A GPU is registered with its NVLink domain when State is ``Completed`` and
Status ``Success``, with a non-zero CliqueId and ClusterUUID: the rules of
the Azure HPC image's own check (Azure/azhpc-images tests/test-definitions.sh
``verify_nvlink_setup``, commit 8e9d055f). A Health Summary of
``Unhealthy`` is a problem too. The node's NVLink domain is
``<ClusterUUID>/<CliqueId>``, which every GPU must share: nodes of one domain
talk over multi-node NVLink (cyclecloud-slurm groups its Slurm blocks by the
same pair).

Reads linearly, keeps nothing but the Fabric sections.
"""
from __future__ import annotations

from dataclasses import dataclass, field

ZERO_UUID = '00000000-0000-0000-0000-000000000000'


@dataclass
class GpuFabric:
    fields: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str:
        return self.fields.get(name, '')

    def domain(self) -> str:
        return f"{self.get('ClusterUUID')}/{self.get('CliqueId')}"

    def problems(self) -> list[str]:
        found = []
        if self.get('State') != 'Completed':
            found.append(f"State {self.get('State') or 'missing'} (expected "
                         'Completed)')
        elif self.get('Status') != 'Success':
            found.append(f"Status {self.get('Status') or 'missing'} "
                         '(expected Success)')
        if self.get('CliqueId') in ('', '0', 'N/A'):
            found.append(f"CliqueId {self.get('CliqueId') or 'missing'}")
        if self.get('ClusterUUID') in ('', ZERO_UUID, 'N/A'):
            found.append(f"ClusterUUID {self.get('ClusterUUID') or 'missing'}")
        if self.get('Health.Summary') == 'Unhealthy':
            found.append('Health Summary Unhealthy')
        return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(' '))


def parse_fabric(text: str) -> list[GpuFabric]:
    """Every GPU's Fabric section, in order."""
    gpus: list[GpuFabric] = []
    current, base, sub, sub_indent = None, 0, '', 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == 'Fabric':
            current, base, sub = GpuFabric(), _indent(line), ''
            gpus.append(current)
            continue
        if current is None:
            continue
        if not stripped or stripped == '--' or _indent(line) <= base:
            current = None
            continue
        name, colon, value = stripped.partition(':')
        name = name.strip()
        if not colon:            # a sub-section heading ('Health')
            sub, sub_indent = name, _indent(line)
            continue
        if sub and _indent(line) <= sub_indent:
            sub = ''
        key = f'{sub}.{name}' if sub else name
        current.fields[key] = value.strip()
    return gpus


@dataclass
class NodeFabric:
    domain: str | None           # None: not in one healthy NVLink domain
    problems: list[str]


def node_fabric(text: str) -> NodeFabric:
    gpus = parse_fabric(text)
    if not gpus:
        return NodeFabric(None, ['no Fabric section in nvidia-smi -q'])
    problems = [f'GPU {i}: {problem}' for i, gpu in enumerate(gpus)
                for problem in gpu.problems()]
    domains = sorted({gpu.domain() for gpu in gpus})
    if len(domains) > 1:
        problems.append('GPUs in different NVLink domains: '
                        + ', '.join(domains))
    return NodeFabric(None if problems else domains[0], problems)
