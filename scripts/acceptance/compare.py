"""What acceptance decides after its ReFrame sessions, from the rows they
stored: each node against its peers and against the site baseline, and
failures shared by most of a partition turned into one partition finding
(scripts/comparison/ holds the rules)."""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from config.results.rows import schema as row_schema
from config.results.store import files as store
from scripts.comparison import baseline, common_mode, peers, siblings

from . import summary
from .plan import scope_of
from .findings import (FAIL, FLAKY, NOT_JUDGED, NOT_MEASURED, PASS,
                       PASSED_AGAIN, PEERS, PUBLISHED, SITE_BASELINE,
                       WHOLE_PARTITION, Finding)

JUDGED_SCOPES = ('node', 'pair')
SHARED = 'shared by the partition'


def rows_of_run(jobids: set[str], since: float) -> list[dict]:
    """The stored rows of this run's jobs (the last attempt of every test
    case), read from the session files written since it started."""
    if not jobids:
        return []
    found = []
    for path in store.session_files():
        try:
            if os.path.getmtime(path) < since:
                continue
        except OSError:
            continue
        found += [row for row in store.read_session_file(path)
                  if str(row.get('check_jobid')) in jobids
                  and not row.get('judged_record_id')
                  # health rows are judged by their rules, not by peers
                  and row.get('facility') != row_schema.HEALTH_FACILITY]
    return found


def row_var(row: dict) -> str:
    """The perf variable as ReFrame named it (the device appended)."""
    var = row.get('check_perf_var') or ''
    return f"{var}_{row['device']}" if row.get('device') else var


def link_rows(findings: list[Finding], rows: list[dict]) -> None:
    """Give each metric finding the record_id of the row it judges."""
    by_job = {(str(r.get('check_jobid')), row_var(r)): r['record_id']
              for r in rows}
    # a job of a batch of nodes has one row per metric and node
    by_node = {(str(r.get('check_jobid')), row_var(r), node): r['record_id']
               for r in rows for node in r.get('check_job_nodelist') or []}
    for f in findings:
        if f.metric and f.record_id is None:
            f.record_id = by_node.get((str(f.jobid), f.metric, f.node)) or \
                by_job.get((str(f.jobid), f.metric))


def _partition(row: dict) -> str:
    return f"{row.get('check_system')}:{row.get('check_partition')}"


def _scope(row: dict) -> str:
    return scope_of(peers.test_of(row))


@dataclass(frozen=True)
class Decided:
    """A verdict about one stored row, decided after the run."""
    row: dict
    basis: str
    fail: bool
    reason: str
    reference: float | None   # what it was held against (median, baseline)
    #: value -> whether it still fails on this basis (--confirm)
    still_fails: Callable[[float], bool] | None = None
    #: 'fail', 'pass' or 'not judged' (peers too few or too spread: the
    #: reason says why)
    status: str = ''


NOT_JUDGED_STATUS = 'not judged'


def peer_status(judgement) -> str:
    """'fail', 'pass' or 'not judged' of a peers.Judgement (its own
    status where it has one; before that, a judgement with no median was
    not judged)."""
    status = getattr(judgement, 'status', None)
    if status:
        return status
    if judgement.median is None:
        return NOT_JUDGED_STATUS
    return FAIL if judgement.fail else PASS


def _why_not_judged(judgement) -> str:
    """'not judged by peers: 3 peers, at least 4 needed' (the judgement's
    own words where it has them)."""
    why = str(getattr(judgement, 'why', None) or '')
    if why.startswith('not judged'):
        return why
    return 'not judged by peers: ' + (why or (
        f'{judgement.peers} peers, at least {judgement.rule.min_peers} '
        'needed'))


def peer_judgements(rows: list[dict], rules: peers.Rules) -> list[Decided]:
    """Every row of a node or pair check against its peers: failed,
    passed, or not judged (with why)."""
    found = []
    for j in peers.judge_rows(
            [r for r in rows if _scope(r) in JUDGED_SCOPES], rules):
        if not getattr(j, 'primary', True):
            continue   # a metric recorded only: peers never judge it
        status = peer_status(j)
        if status == NOT_JUDGED_STATUS:
            found.append(Decided(j.row, PEERS, False, _why_not_judged(j),
                                 j.median, None, status))
            continue
        fail = status == FAIL
        found.append(Decided(j.row, PEERS, fail,
                             j.reason(j.row.get('check_perf_unit'))
                             if fail else '', j.median, j.still_fails,
                             status))
    return found


def not_judged_findings(decided: list[Decided],
                        measured: list[Finding]) -> list[Finding]:
    """A 'not judged' finding for each node of each row its peers could
    not judge and no other basis judged either: no published reference
    (its finding neither passed nor failed) and no site-baseline verdict.
    A row judged on some basis is judged."""
    judged = {d.row['record_id'] for d in decided
              if d.status != NOT_JUDGED_STATUS}
    judged |= {f.record_id for f in measured if f.record_id and
               (f.basis == PUBLISHED or f.verdict in (PASS, FAIL))}
    found, seen = [], set()
    for d in decided:
        record = d.row['record_id']
        if d.status != NOT_JUDGED_STATUS or record in judged or \
                record in seen:
            continue
        seen.add(record)
        row = d.row
        scope = _scope(row)
        nodes = list(row.get('check_job_nodelist') or [])
        for node in nodes:
            value = row.get('check_perf_value')
            found.append(Finding(
                node=node, partition=_partition(row),
                check=peers.unpinned(row.get('check_display_name')),
                verdict=NOT_JUDGED, scope=scope, metric=row_var(row),
                value=None if value is None else float(value),
                unit=row.get('check_perf_unit'), reference=d.reference,
                reason=d.reason, jobid=row.get('check_jobid'),
                partner=next((n for n in nodes if n != node), None)
                if scope == 'pair' else None,
                basis=PEERS, record_id=record))
    return found


def sibling_judgements(rows: list[dict],
                       rules: peers.Rules = siblings.DEFAULT_RULES
                       ) -> list[Decided]:
    """Each device of a one-node job against the node's other devices of
    the same job (its GPUs, its HCAs): scripts/comparison/siblings.py."""
    return [Decided(j.row, siblings.BASIS, j.fail,
                    siblings.reason(j) if j.fail else '', j.median,
                    j.still_fails)
            for j in siblings.judge_rows(
                [r for r in rows if _scope(r) == 'node'], rules)
            if j.median is not None]


def baseline_judgements(rows: list[dict], layer: baseline.Layer
                        ) -> list[Decided]:
    return [Decided(v.row, SITE_BASELINE, v.fail, v.reason, v.entry.value,
                    lambda value, entry=v.entry: not
                    entry.bounds()[0] <= value <= entry.bounds()[1])
            for v in baseline.judge_rows(rows, layer)]


def failing_findings(decided: list[Decided],
                     measured: list[Finding]) -> list[Finding]:
    """A failing finding for each node of each failing row (with the
    attempts of the measurement, from the *measured* findings of the same
    row); a row of a check that ran once per partition fails the
    partition."""
    attempts = {f.record_id: f.attempts for f in measured if f.record_id}
    found = []
    for d in decided:
        if not d.fail:
            continue
        row = d.row
        scope = _scope(row)
        nodes = list(row.get('check_job_nodelist') or []) \
            if scope in JUDGED_SCOPES else [WHOLE_PARTITION]
        for node in nodes:
            partner = next((n for n in nodes if n != node), None) \
                if scope == 'pair' else None
            found.append(Finding(
                node=node, partition=_partition(row),
                check=peers.unpinned(row.get('check_display_name')),
                verdict=FAIL, scope=scope if scope in JUDGED_SCOPES
                else 'whole', metric=row_var(row),
                value=float(row['check_perf_value']),
                unit=row.get('check_perf_unit'), reference=d.reference,
                reason=d.reason, partner=partner,
                jobid=row.get('check_jobid'),
                attempts=attempts.get(row['record_id'], 1),
                basis=d.basis, record_id=row['record_id']))
    return found


def flaky_records(findings: list[Finding]) -> set[str]:
    """The judged rows whose failure did not repeat when measured again
    (and that no node still fails on)."""
    flaky = {f.record_id for f in findings if f.flaky and f.record_id}
    still = {f.record_id for f in findings if f.record_id and
             f.verdict == FAIL and not f.set_aside}
    return flaky - still


def verdict_rows(decided: list[Decided], session_id: str,
                 findings: list[Finding] = ()) -> list[dict]:
    """A verdict row for every failure decided after the run (a pass adds
    nothing the judged row does not say, and 1,000 nodes x 50 metrics
    would double the store); the site baseline's are on the judged rows
    themselves, written by the ReFrame run (checks/common/
    site_baseline_verdicts.py). A failure that passed when measured again
    (*findings*' flaky ones) is written 'flaky', with its first reason; a
    row no basis could judge (a not-judged finding) 'not_judged', with
    why."""
    flaky = flaky_records(list(findings))
    not_judged = {f.record_id for f in findings
                  if f.verdict == NOT_JUDGED and f.record_id}
    rows = []
    for d in decided:
        if d.status == NOT_JUDGED_STATUS and d.row['record_id'] in \
                not_judged:
            not_judged.discard(d.row['record_id'])   # one row per row
            rows.append(summary.verdict_row(d.row, session_id, NOT_JUDGED,
                                            d.basis, d.reason, d.reference))
            continue
        if not d.fail or d.basis == SITE_BASELINE:
            continue
        if d.row['record_id'] in flaky:
            rows.append(summary.verdict_row(
                d.row, session_id, FLAKY, d.basis,
                f'{PASSED_AGAIN}; first: {d.reason}', d.reference))
        else:
            rows.append(summary.verdict_row(d.row, session_id, FAIL, d.basis,
                                            d.reason, d.reference))
    return rows


def _unit(f: Finding) -> frozenset:
    return frozenset({f.node, f.partner} - {None})


def shared_failures(findings: list[Finding]) -> list[Finding]:
    """Mark the failures most of a partition shares (common_mode) and
    return one partition finding for each."""
    judged_units = defaultdict(set)
    failing = []
    for f in findings:
        if f.node == WHOLE_PARTITION or f.scope not in JUDGED_SCOPES \
                or f.verdict == NOT_MEASURED:
            continue
        judged_units[(f.partition, f.scope)].add(_unit(f))
        if f.verdict == FAIL:
            failing.append(f)
    shared = common_mode.common_mode(
        [common_mode.Failure(f.partition, f.scope, _unit(f), f.check,
                             f.metric, f.reason) for f in failing],
        {key: len(units) for key, units in judged_units.items()})
    found = []
    for s in shared:
        for f in failing:
            if (f.partition, f.scope, f.check, f.metric) == \
                    (s.partition, s.scope, s.check, s.metric) and \
                    common_mode.masked(f.reason, tuple(_unit(f))) == s.reason:
                f.set_aside = SHARED
        found.append(Finding(node=WHOLE_PARTITION, partition=s.partition,
                             check=s.check, verdict=FAIL, scope='common',
                             metric=s.metric, reason=s.describe()))
    return found
