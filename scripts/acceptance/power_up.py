"""Powered-down nodes (``idle~``): left alone by default, started by Slurm
for the run with ``--power-up`` (at most ``--max-power-up`` of them), and
what that costs said before anything starts.

CycleCloud powers a node up when a job needs it and bills it from then until
Slurm suspends it again, ``SuspendTime`` after its last job
(Azure/cyclecloud-slurm README, "Manual scaling"; slurm.conf(5)
SuspendTime). Acceptance pins its jobs to nodes, so a job pinned to a
powered-down node is what starts it: nothing here calls a resume program.
"""
from __future__ import annotations

import re

from . import slurm

DEFAULT_MAX = 8
_SUSPEND_TIME = re.compile(r'^SuspendTime\s*=\s*(\S+)(?:\s+sec)?', re.M)


def choose(states: dict[str, str], power_up: bool, budget: int
           ) -> list[str]:
    """The powered-down nodes of one partition to start, in sinfo order."""
    if not power_up or budget <= 0:
        return []
    return [n for n, s in states.items() if slurm.is_powered_down(s)][:budget]


def suspend_time_s(config_text: str) -> int | None:
    """`scontrol show config` -> SuspendTime in seconds; None when power
    saving is off (NONE, INFINITE, -1) or the line is missing."""
    match = _SUSPEND_TIME.search(config_text)
    if not match:
        return None
    value = match.group(1)
    return int(value) if value.isdigit() and int(value) > 0 else None


def read_suspend_time_s(env: dict | None = None) -> int | None:
    try:
        return suspend_time_s(slurm.run_scontrol(['show', 'config'], env))
    except slurm.SchedulerError:
        return None


def cost_lines(started: dict[str, list[str]],
               states: dict[str, dict[str, str]],
               suspend_s: int | None) -> list[str]:
    """What starting these nodes ({partition: nodes}) means, before
    anything starts; ``states``: {partition: {node: Slurm state}}."""
    count = sum(len(nodes) for nodes in started.values())
    if not count:
        return []
    left = sum(slurm.is_powered_down(state) for part in states.values()
               for state in part.values()) - count
    lines = [f'--power-up: Slurm starts {count} powered-down node(s) for '
             'this run: ' + '; '.join(f'{part}: {", ".join(nodes)}'
                                      for part, nodes in started.items())]
    if suspend_s:
        idle_h = count * suspend_s / 3600
        lines.append(f'  they bill while the checks run and then for '
                     f'SuspendTime ({suspend_s} s) after their last job: '
                     f'at least {idle_h:.2f} node-hours beyond the run '
                     'itself')
    else:
        lines.append('  Slurm has no SuspendTime: started nodes stay up (and '
                     'bill) until someone powers them down')
    if left:
        lines.append(f'  {left} more powered-down node(s) stay down '
                     '(--max-power-up)')
    return lines
