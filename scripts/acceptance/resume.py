"""The drain lifecycle (`acceptance --resume`): drained nodes take no jobs,
so the nodes that clusterproof itself drained (their reason starts with
DRAIN_PREFIX) are held in a Slurm maintenance reservation made for them,
resumed inside it, tested there, and left resumed when they pass; the
others are drained again with an updated reason, and the reservation is
deleted. A drain by an administrator, or by CycleCloud's health agent
(Azure/cyclecloud-healthagent, whose reasons start "Healthcheck failures"
and which resumes only those), is never touched."""
from __future__ import annotations

import getpass

from . import slurm, verdicts

DRAIN_PREFIX = 'clusterproof acceptance:'
RESERVATION_MINUTES = 24 * 60    # released at the end of the run anyway
DRAINED_STATES = ('drained',)   # idle and drained: no job of anyone's left


def our_drains(reasons: dict[str, tuple[str, str]]) -> list[str]:
    """The nodes clusterproof drained, now idle."""
    return sorted(node for node, (state, reason) in reasons.items()
                  if state.rstrip('*~#!%$@') in DRAINED_STATES
                  and reason.startswith(DRAIN_PREFIX))


def reservation_name(session_id: str) -> str:
    return f'clusterproof-resume-{session_id}'


def hold(name: str, nodes: list[str], say) -> None:
    """Reserve the nodes, resume them inside the reservation, and wait
    until Slurm hears from them."""
    slurm.reserve(name, nodes, getpass.getuser(), RESERVATION_MINUTES)
    say(f'reservation {name} holds {",".join(nodes)}')
    for node in nodes:
        slurm.resume(node)
        say(f'resumed {node} inside {name} to test it')
    silent = slurm.wait_responding(nodes)
    if silent:
        say(f'{",".join(silent)} not answering Slurm '
            f'{slurm.RESPONDING_S} s after resuming: their checks will '
            'say they were not measured')


def still_bad(node_verdicts, targets: set[tuple[str, str]],
              describe) -> list[dict]:
    """Every tested node that is not good is drained again; *describe*
    gives a drain reason naming the worst finding."""
    drains = []
    for v in node_verdicts:
        if (v.partition, v.node) not in targets or v.verdict == verdicts.GOOD:
            continue
        detail = describe(v)[len(DRAIN_PREFIX):]
        drains.append({'node': v.node, 'reason': f'{DRAIN_PREFIX} still '
                       f'{v.verdict.replace("_", " ")} after --resume:'
                       f'{detail}'})
    return drains
