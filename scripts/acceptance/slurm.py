"""What acceptance asks Slurm: is it up, which nodes can run jobs, drain."""
from __future__ import annotations

import shlex
import subprocess
import time

# Slurm node states (sinfo %T, lower case) that accept new jobs. Flags are
# suffixes: '*' not responding, '~' powered off, '#' powering up, '!'/'%'
# powering down, '$' maintenance reservation, '@' pending reboot.
# A flagged state ('idle*') is not usable.
USABLE_STATES = {'idle', 'mixed', 'allocated', 'completing', 'planned'}
TIMEOUT_S = 60
RESPONDING_S = 60


class SchedulerError(RuntimeError):
    """Slurm did not answer: the run is broken, no node is to blame."""


def _slurm(argv: list[str], env: dict | None) -> str:
    try:
        result = subprocess.run(argv, env=env, capture_output=True, text=True,
                                timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SchedulerError(f'{argv[0]} not found: is this a Slurm login '
                             'node?') from None
    except subprocess.TimeoutExpired:
        raise SchedulerError(f'`{shlex.join(argv)}` did not answer within '
                             f'{TIMEOUT_S} s') from None
    if result.returncode != 0:
        raise SchedulerError(f'`{shlex.join(argv)}` failed: '
                             f'{(result.stderr or result.stdout).strip()}')
    return result.stdout


def run_scontrol(args: list[str], env: dict | None = None) -> str:
    return _slurm(['scontrol', *args], env)


def check_controller(env: dict | None = None) -> None:
    """Raise SchedulerError unless slurmctld answers."""
    out = _slurm(['scontrol', 'ping'], env)
    if 'UP' not in out:
        raise SchedulerError(f'slurmctld is not up: {out.strip()}')


def parse_node_states(text: str) -> dict[str, str]:
    """`sinfo -h -N -o '%N %T'` -> {node: state}; a node listed in several
    partitions appears once."""
    states = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2:
            states.setdefault(fields[0], fields[1].lower())
    return states


def is_usable(state: str) -> bool:
    return state in USABLE_STATES


def is_powered_down(state: str) -> bool:
    """Powered off by Slurm's power saving ('idle~'), not down: a job for
    it makes Slurm start it (CycleCloud keeps nodes so until needed)."""
    return state.endswith('~') and state[:-1] in USABLE_STATES


def node_states(partition: str, env: dict | None = None) -> dict[str, str]:
    return parse_node_states(_slurm(
        ['sinfo', '-h', '-N', '-p', partition, '-o', '%N %T'], env))


def partition_from_access(access: list[str]) -> str | None:
    """The Slurm partition in a ReFrame partition's `access` options."""
    for i, option in enumerate(access):
        if option.startswith('--partition='):
            return option.split('=', 1)[1]
        if option.startswith('-p') and len(option) > 2:
            return option[2:]
        if option in ('-p', '--partition') and i + 1 < len(access):
            return access[i + 1]
    return None


def drain_command(node: str, reason: str) -> list[str]:
    return ['scontrol', 'update', f'nodename={node}', 'state=drain',
            f'reason={reason}']


def drain(node: str, reason: str, env: dict | None = None) -> None:
    _slurm(drain_command(node, reason), env)


# --- the drain lifecycle (--resume) -----------------------------------------

def parse_node_reasons(text: str) -> dict[str, tuple[str, str]]:
    """`sinfo -h -N -o '%N|%T|%E'` -> {node: (state, reason)}."""
    found = {}
    for line in text.splitlines():
        fields = line.split('|', 2)
        if len(fields) == 3:
            found.setdefault(fields[0].strip(), (fields[1].strip().lower(),
                                                 fields[2].strip()))
    return found


def node_reasons(partition: str, env: dict | None = None
                 ) -> dict[str, tuple[str, str]]:
    return parse_node_reasons(_slurm(
        ['sinfo', '-h', '-N', '-p', partition, '-o', '%N|%T|%E'], env))


def reservation_command(name: str, nodes: list[str], user: str,
                        minutes: int) -> list[str]:
    """A maintenance reservation of these nodes for *user* only, starting
    now, that running jobs do not block."""
    return ['scontrol', 'create', 'reservation', f'ReservationName={name}',
            f'Nodes={",".join(nodes)}', 'StartTime=now',
            f'Duration={minutes}', f'Users={user}', 'Flags=maint,ignore_jobs']


def reserve(name: str, nodes: list[str], user: str, minutes: int,
            env: dict | None = None) -> None:
    _slurm(reservation_command(name, nodes, user, minutes), env)


def release(name: str, env: dict | None = None) -> None:
    _slurm(['scontrol', 'delete', f'ReservationName={name}'], env)


def resume(node: str, env: dict | None = None) -> None:
    _slurm(['scontrol', 'update', f'nodename={node}', 'state=resume'], env)


def silent_nodes(states: dict[str, str], nodes: list[str]) -> list[str]:
    """The nodes Slurm has not heard from ('idle*'), or holds down or
    drained: a job asking for them pends ReqNodeNotAvail."""
    return sorted(node for node in nodes
                  if states.get(node, '*').endswith('*')
                  or states[node].startswith(('down', 'drain', 'fail')))


def wait_responding(nodes: list[str], timeout_s: float = RESPONDING_S,
                    env: dict | None = None, sleep=time.sleep,
                    clock=time.monotonic) -> list[str]:
    """Wait until every node answers Slurm; the nodes still silent after
    *timeout_s*. A node just resumed reads 'idle*' for a few seconds, and
    ReFrame cancels a job that pends ReqNodeNotAvail meanwhile."""
    deadline = clock() + timeout_s
    while True:
        silent = silent_nodes(parse_node_states(_slurm(
            ['sinfo', '-h', '-N', '-n', ','.join(nodes), '-o', '%N %T'],
            env)), nodes)
        if not silent or clock() >= deadline:
            return silent
        sleep(1)
