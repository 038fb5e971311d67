"""Who a node is to Azure: its VM's ARM id, VM unique id and subscription
(the Instance Metadata Service's ``compute`` document), and the physical
host under it (``PhysicalHostName`` of the Hyper-V KVP pool 3).

Both can only be read on the node itself, so acceptance asks each node to
be reported in one short Slurm step (probe_command) before it drains it.
The URL and the pool's path are settings; ``%n`` in either is the node's
name, so that a sandbox's nodes on one host can each have their own.
Parsing the step's output is a pure function (parse_probe)."""
from __future__ import annotations

import base64
import json
import shlex
import subprocess
from dataclasses import dataclass, field

from checks.health.fingerprint import kvp_pairs
from config.results import settings

# Guest Health Reporting wants this key, not the fully qualified one
# (guest-health-impact-report: "PhysicalHostName ... alphanumeric")
HOST_KEY = 'PhysicalHostName'
STEP_TIMEOUT_S = 120


@dataclass
class Identity:
    node: str
    resource_id: str | None = None
    vm_id: str | None = None
    subscription: str | None = None
    location: str | None = None
    physical_host: str | None = None
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def compute_url(node: str) -> str:
    return settings.imds_compute_url(node)


def kvp_path(node: str) -> str:
    return settings.kvp_pool(node)


def probe_script(node: str) -> str:
    """What the node runs: each source base64-encoded on a line of its own,
    or a line saying why it could not be read."""
    url, pool = shlex.quote(compute_url(node)), shlex.quote(kvp_path(node))
    return (
        'if command -v curl >/dev/null 2>&1; then '
        f'echo "compute: $(curl -sS -m 10 -H Metadata:true {url} 2>&1 '
        '| base64 | tr -d \'\\n\')"; '
        'else echo "compute-error: no curl on the node"; fi; '
        f'if [ -r {pool} ]; then echo "kvp: $(base64 < {pool} '
        '| tr -d \'\\n\')"; '
        f'else echo "kvp-error: "{pool}" is not readable"; fi')


def probe_command(node: str, partition: str | None,
                  reservation: str | None = None) -> list[str]:
    return (['srun', '--nodes=1', '--ntasks=1', f'--nodelist={node}',
             '--time=2', '--job-name=clusterproof-identity']
            + ([f'--partition={partition}'] if partition else [])
            + ([f'--reservation={reservation}'] if reservation else [])
            + ['sh', '-c', probe_script(node)])


def _decoded(text: str) -> bytes | None:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except ValueError:
        return None


def parse_probe(node: str, output: str) -> Identity:
    """The identity of *node* from its probe step's output; what is missing
    is named in ``problems``."""
    found = Identity(node)
    lines = dict(line.split(': ', 1) for line in output.splitlines()
                 if ': ' in line)
    raw = _decoded(lines.get('compute', ''))
    if 'compute-error' in lines:
        found.problems.append(f"metadata service: {lines['compute-error']}")
    elif raw is None:
        found.problems.append('metadata service: no answer from the probe')
    else:
        try:
            compute = json.loads(raw)
        except ValueError:
            compute = None
        if not isinstance(compute, dict):
            found.problems.append(
                f'metadata service at {compute_url(node)} answered no JSON '
                f'document: {raw[:120].decode(errors="replace")!r}')
        else:
            found.resource_id = compute.get('resourceId') or None
            found.vm_id = compute.get('vmId') or None
            found.subscription = compute.get('subscriptionId') or None
            found.location = compute.get('location') or None
            if not found.resource_id:
                found.problems.append('metadata service: no resourceId')
    pool = _decoded(lines.get('kvp', ''))
    if 'kvp-error' in lines:
        found.problems.append(f"KVP pool: {lines['kvp-error']}")
    elif pool is None:
        found.problems.append('KVP pool: not read by the probe')
    else:
        found.physical_host = kvp_pairs(pool).get(HOST_KEY) or None
        if not found.physical_host:
            found.problems.append(f'KVP pool {kvp_path(node)} has no '
                                  f'{HOST_KEY}')
    return found


def node_partition(node: str) -> str | None:
    """A Slurm partition that holds *node* (sinfo), for its probe step."""
    try:
        out = subprocess.run(['sinfo', '-h', '-N', '-n', node, '-o', '%P'],
                             capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = [word.rstrip('*') for word in out.split()]
    return names[0] if names else None


def probe(node: str, reservation: str | None = None) -> Identity:
    """Run the probe step on *node*; never raises."""
    argv = probe_command(node, node_partition(node), reservation)
    try:
        result = subprocess.run(argv, capture_output=True, text=True,
                                timeout=STEP_TIMEOUT_S,
                                stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return Identity(node, problems=['srun not found: cannot run the '
                                        'identity step on the node'])
    except subprocess.TimeoutExpired:
        return Identity(node, problems=[f'the identity step on {node} did '
                                        f'not end within {STEP_TIMEOUT_S} s'])
    if result.returncode != 0:
        return Identity(node, problems=[
            f'the identity step on {node} failed (srun exit '
            f'{result.returncode}): {result.stderr.strip()[-300:]}'])
    return parse_probe(node, result.stdout)
