"""A line at least every minute while jobs are pending or running.

ReFrame prints nothing between a job's submission and its end: on a busy
cluster (or with an HPCC of an hour) a run looks hung for as long. Every
submitted job is registered here; a daemon thread of the ReFrame process
prints, every ``CLUSTERPROOF_PROGRESS_S`` seconds (default 60), how many
jobs are still pending or running and the one that has waited longest.
Only job attributes the poller already set are read (never a scheduler
call from this thread).
"""
from __future__ import annotations

import os
import threading
import time

from reframe.core.logging import getlogger

INTERVAL_VARIABLE = 'CLUSTERPROOF_PROGRESS_S'
DEFAULT_INTERVAL_S = 60.0
# Job states (Slurm's, PBS's and ReFrame's local scheduler's) of a job that
# has not finished; None is a job submitted but not polled yet.
ACTIVE_STATES = frozenset({
    'PENDING', 'RUNNING', 'CONFIGURING', 'COMPLETING', 'REQUEUED',
    'RESIZING', 'SUSPENDED', 'QUEUED', 'HELD', 'WAITING', 'EXITING'})
PENDING_STATES = frozenset({'PENDING', 'QUEUED', 'HELD', 'WAITING',
                            'REQUEUED', None})


def interval_s(environ=os.environ) -> float:
    try:
        value = float(environ.get(INTERVAL_VARIABLE, DEFAULT_INTERVAL_S))
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value > 0 else DEFAULT_INTERVAL_S


def _states(state):
    return {None} if not state else set(state.split(','))


def is_active(state) -> bool:
    return bool(_states(state) & (ACTIVE_STATES | {None}))


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f'{minutes} min {seconds} s' if minutes else f'{seconds} s'


def progress_line(waiting: list[tuple], now: float) -> str | None:
    """``waiting``: (test and partition, job id, submitted at, state) of the
    jobs not finished; None when there are none."""
    if not waiting:
        return None
    pending = sum(1 for *_, state in waiting if _states(state) & PENDING_STATES)
    label, jobid, submitted, state = min(waiting, key=lambda job: job[2])
    return (f'clusterproof: {pending} job(s) pending, {len(waiting) - pending}'
            f' running; waiting longest: {label} (job {jobid}, '
            f'{state or "submitted"} for {_duration(now - submitted)})')


class _Watch:
    def __init__(self):
        self.lock = threading.Lock()
        self.jobs = {}       # id(job) -> (label, job)
        self.thread = None

    def add(self, label, job):
        with self.lock:
            self.jobs[id(job)] = (label, job)
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, daemon=True,
                                               name='clusterproof-progress')
                self.thread.start()

    def waiting(self):
        with self.lock:
            entries = list(self.jobs.items())
        found = []
        for key, (label, job) in entries:
            if not job.submit_time:
                continue          # not submitted yet (or skipped before)
            if is_active(job.state):
                found.append((label, job.jobid, job.submit_time, job.state))
            else:
                with self.lock:
                    self.jobs.pop(key, None)
        return found

    def _loop(self):
        while True:
            time.sleep(interval_s())
            line = progress_line(self.waiting(), time.time())
            if line:
                getlogger().info(line)


WATCH = _Watch()

