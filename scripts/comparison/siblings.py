"""A device against its siblings: the other GPUs (or HCAs) of the same node,
measured by the same job for the same metric.

An 8-GPU all_reduce, or a node's mean, averages one slow GPU away; so does
a comparison of nodes when every node has one. Here the members are the
devices of one node and one job (a row's ``device``: ``gpu3``,
``mlx5_ib2``), judged by the peers' rule (scripts/comparison/peers.py: the
leave-one-out median and MAD, a fraction worse than the median *and* a
robust z beyond the limit), so one node alone names its slow GPU or HCA.

Siblings are fewer than peers: a GB200/GB300 VM has 4 GPUs, so a device is
judged with at least 3 siblings (``DEFAULT_MIN_SIBLINGS``). The tolerance
and z limit are the peers' sourced defaults (10 %, 3.5). Where a metric's
healthy spread among siblings is wider (the fat tail of eight HCAs), a run
passes a rule of its own per test (``Rules.by_test``), as for peers.

A verdict is a row of its own (``verdict_basis`` 'siblings'), never an
edit of the judged row; only failures are written.
"""
from __future__ import annotations

import dataclasses

from . import peers

BASIS = 'siblings'
DEFAULT_MIN_SIBLINGS = 3
DEFAULT_RULE = peers.Rule(min_peers=DEFAULT_MIN_SIBLINGS)
DEFAULT_RULES = peers.Rules(default=DEFAULT_RULE)


def node_of(row: dict) -> str:
    nodes = row.get('check_job_nodelist') or []
    return ','.join(nodes)


def is_sibling_measurement(row: dict) -> bool:
    """A measured row about one device of a one-node job."""
    return (peers.is_measurement(row) and bool(row.get('device'))
            and len(row.get('check_job_nodelist') or []) == 1)


def _as_peer_row(row: dict) -> dict:
    """The row seen by the peers' grouping with node and device swapped:
    its group is then (run, partition, SKU, test, metric, node, job) and
    its member the device."""
    return {**row, 'device': f"{node_of(row)}#{row.get('check_jobid')}",
            'check_job_nodelist': [row['device']]}


def _node_in_run(row: dict, member: str) -> tuple:
    """The multiple-comparison guard counts a node's judged devices (the
    row seen by the peers' grouping names the node in its device)."""
    return (row.get('session_id') or '', row['device'].rsplit('#', 1)[0])


def judge_rows(rows, rules: peers.Rules = DEFAULT_RULES
               ) -> list[peers.Judgement]:
    """Every device of every node and job in *rows* against its siblings;
    each judgement's ``member`` is the device and ``row`` the judged row."""
    originals = {row['record_id']: row for row in rows
                 if is_sibling_measurement(row)}
    judged = peers.judge_rows([_as_peer_row(row)
                               for row in originals.values()], rules,
                              guard_key=_node_in_run)
    return [dataclasses.replace(j, row=originals[j.row['record_id']])
            for j in judged]


def reason(judgement: peers.Judgement) -> str:
    """'gpu3: 12.5% below the 7 siblings' median 48.1 GB/s, robust z -9.0'"""
    row = judgement.row
    text = judgement.reason(row.get('check_perf_unit'))
    return f"{row.get('device')}: " + text.replace("peers' median",
                                                   "siblings' median")
