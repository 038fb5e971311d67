"""Consecutive runs of items whose sizes add up to at most a limit: the
upload bodies sync and the live push send, the batches of session files a
query reads at a time."""
from __future__ import annotations


def runs_under(items, limit: int, size_of, start: int = 0):
    """Lists of consecutive *items* whose *size_of* adds up, with *start*
    (what every run holds besides them), to at most *limit*; an item too
    large alone is a run of its own."""
    run, size = [], start
    for item in items:
        grows = size_of(item)
        if run and size + grows > limit:
            yield run
            run, size = [], start
        run.append(item)
        size += grows
    if run:
        yield run
