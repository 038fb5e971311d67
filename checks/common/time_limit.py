"""Every job gets a wall-clock limit, so that a hung benchmark (an HPL stuck
in a collective, an ior on a dead mount) cannot hold nodes forever.

A check states how long a healthy run takes (``expected_runtime_s``, which
it may compute from its problem size); the limit is that times a safety
factor plus a fixed margin for job start-up. ReFrame's own ``time_limit``
wins when set (``-S time_limit=2h``), as does a partition's configured
``time_limit``.
"""
from __future__ import annotations

import reframe as rfm

#: Seconds added to every limit: scheduler prolog, MPI start-up, staging.
START_MARGIN_S = 300


def limit_seconds(expected_s: float, factor: float,
                  margin_s: float = START_MARGIN_S) -> int:
    """The limit for a run expected to take ``expected_s`` seconds, rounded
    up to whole minutes (what schedulers show)."""
    if expected_s <= 0 or factor < 1:
        raise ValueError(f'expected runtime must be > 0 and factor >= 1, '
                         f'got {expected_s} s and {factor}')
    seconds = expected_s * factor + margin_s
    return int(-(-seconds // 60) * 60)


class TimeLimited(rfm.RegressionTestPlugin):
    #: Seconds a healthy run of this check takes (the job's whole script).
    expected_runtime_s = variable(float, int, value=600)
    #: The limit is expected_runtime_s x this + START_MARGIN_S.
    time_limit_factor = variable(float, int, value=3.0)

    def expected_seconds(self) -> float:
        """Override where the runtime follows from the problem size."""
        return self.expected_runtime_s

    def fan_rounds(self) -> int:
        """How many runs of the check the job makes one after the other
        (fanned_job.py overrides this for a batch of pairs)."""
        return 1

    @run_before('run')
    def _set_time_limit(self):
        # None = neither the user (-S time_limit=...) nor the check chose
        # one; a partition's configured time_limit is the site's choice.
        if self.time_limit is None and not self.current_partition.time_limit:
            # a batch of ring pairs runs its pairs in rounds, one after
            # the other (fanned_job.py): each round as long as one run
            rounds = self.fan_rounds()
            self.time_limit = limit_seconds(
                self.expected_seconds() * rounds, self.time_limit_factor)
