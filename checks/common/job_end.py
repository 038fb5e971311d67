"""How a job ended, when it ended early: a time-limit kill is named as such,
instead of as the truncated output it leaves behind, and so is a job
stopped by its tool guard (external_tool.py: the tool is not on the node).

Two witnesses, either suffices: the job's state as the scheduler reports it
to ReFrame (``TIMEOUT`` from Slurm's sacct and from ReFrame's local
scheduler), and, where the scheduler forgets finished jobs (ReFrame's
``squeue`` backend reports every vanished job as COMPLETED), the line
slurmstepd writes into the job's stderr:
``slurmstepd: error: *** JOB 12 ON sb-n1 CANCELLED AT ... DUE TO TIME LIMIT ***``.
"""
from __future__ import annotations

import os

# Lines a job script prints when it cannot even start the tool
# (external_tool.py); they explain a failure better than the parser.
GUARD_PREFIX = 'clusterproof: '
TIME_LIMIT_STATES = frozenset({'TIMEOUT'})
SLURMSTEPD_TIME_LIMIT = 'DUE TO TIME LIMIT'


def _duration(seconds: float | None) -> str:
    if not seconds:
        return 'its time limit'
    seconds = int(seconds)
    if seconds % 60:
        return f'its time limit of {seconds} s'
    return f'its time limit of {seconds // 60} min'


def _slurmstepd_line(stderr_path: str | None) -> str | None:
    if not stderr_path or not os.path.isfile(stderr_path):
        return None
    with open(stderr_path, errors='replace') as stream:
        for line in stream:
            if SLURMSTEPD_TIME_LIMIT in line and '***' in line:
                return line.strip()
    return None


def time_limit_reason(state: str | None, time_limit_s: float | None,
                      stderr_path: str | None = None) -> str | None:
    """Why the job's output is cut, when it was killed at its time limit;
    None otherwise."""
    states = set((state or '').split(','))
    if states & TIME_LIMIT_STATES:
        witness = f'scheduler job state {state}'
    else:
        line = _slurmstepd_line(stderr_path)
        if line is None:
            return None
        witness = f'job stderr: {line}'
    return (f'killed at {_duration(time_limit_s)} ({witness}); raise it with '
            '-S time_limit=... or -S time_limit_factor=...')


def guard_message(stderr_path: str | None) -> str | None:
    """What the job's tool guard said on its stderr, if it stopped it."""
    if not stderr_path or not os.path.isfile(stderr_path):
        return None
    with open(stderr_path, errors='replace') as stream:
        for line in stream:
            if line.startswith(GUARD_PREFIX):
                return line[len(GUARD_PREFIX):].rstrip('\r\n')
    return None


def problem(state: str | None, time_limit_s: float | None,
            stderr_path: str | None) -> str | None:
    """Why the job measured nothing, where it says so itself: killed at its
    time limit, or stopped by its tool guard; None otherwise."""
    return (time_limit_reason(state, time_limit_s, stderr_path)
            or guard_message(stderr_path))
