"""Every job gets a wall-clock limit, so that a hung benchmark (an HPL stuck
in a collective, an ior on a dead mount) cannot hold nodes forever.

A check states how long a healthy run takes (``expected_runtime_s``, which
it may compute from its problem size); the limit is that times a safety
factor plus a fixed margin for job start-up. ReFrame's own ``time_limit``
wins when set (``-S time_limit=2h``), as does a partition's configured
``time_limit``.
"""
from __future__ import annotations


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

