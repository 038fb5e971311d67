"""What Log Analytics has not accepted yet, and shipping it: the logic of
`clusterproof sync` (scripts/cli/sync.py is its command line).

The backlog is every stored row whose record_id is in no ledger, from
sessions that are over (a running session's live push holds its lock and
ships it itself). Rows go out through azure-monitor-ingestion's
LogsIngestionClient, in the bodies and with the retries of
config/results/shipping.py, and each accepted call is written to the ledger of the
sessions its rows came from before the next call: an interrupted sync
resumes without loss and without sending anything twice.
"""
from __future__ import annotations

import datetime as dt
import io
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import azure_logs, ledger, shipping, store

MAX_ATTEMPTS = 6           # calls per body before it is left for next time
MAX_RETRY_SECONDS = 300


@dataclass
class Backlog:
    rows: list = field(default_factory=list)
    ledger_of: dict = field(default_factory=dict)    # record_id -> Ledger
    sessions: dict = field(default_factory=dict)     # session -> rows
    running: list = field(default_factory=list)      # sessions skipped
    set_aside: dict = field(default_factory=dict)    # record_id -> entry


def _wanted(path: Path, session: str | None, since: dt.date | None) -> bool:
    if session and path.stem != session:
        return False
    if since:
        try:
            return dt.date.fromisoformat(path.parent.name) >= since
        except ValueError:
            return True
    return True


def accepted_everywhere(files) -> dict[str, int]:
    """record_id -> time of its latest 204, over every ledger."""
    accepted = {}
    for path in files:
        accepted.update(ledger.read_ledger(ledger.ledger_path(path)))
    return accepted


def find_backlog(session: str | None = None,
                 since: dt.date | None = None) -> Backlog:
    files = store.session_files()
    shipped = accepted_everywhere(files)
    backlog = Backlog()
    for path in files:
        if not _wanted(path, session, since):
            continue
        if ledger.is_locked(ledger.session_lock_path(path)):
            backlog.running.append(path.stem)
            continue
        session_ledger = ledger.Ledger(ledger.ledger_path(path))
        aside = ledger.read_rejected(ledger.rejected_path(path))
        for row in store.read_session_file(path):
            record_id = row.get('record_id')
            if not record_id or record_id in shipped:
                continue
            if record_id in aside:
                backlog.set_aside[record_id] = aside[record_id]
                continue
            shipped[record_id] = 0      # a row twice in the store: once
            backlog.rows.append(shipping.with_completion_time(row))
            backlog.ledger_of[record_id] = session_ledger
            backlog.sessions[path.stem] = \
                backlog.sessions.get(path.stem, 0) + 1
    return backlog


class SdkTransport:
    """One body per call through LogsIngestionClient (azure-core adds its
    own retries of 500/503/504 and honours Retry-After); every failure it
    gives up on becomes an Outcome for config/results/shipping.py's retries."""

    def __init__(self, settings: dict, credential):
        from azure.monitor.ingestion import LogsIngestionClient
        self.settings = settings
        self.client = LogsIngestionClient(
            endpoint=settings['endpoint'], credential=credential,
            connection_timeout=10, read_timeout=60)

    def __call__(self, body: bytes, gzipped: bool) -> shipping.Outcome:
        from azure.core.exceptions import (ClientAuthenticationError,
                                           HttpResponseError,
                                           ServiceRequestError,
                                           ServiceResponseError)
        try:
            # A gzip'd stream is sent as it is, with Content-Encoding: gzip.
            self.client.upload(rule_id=self.settings['rule_id'],
                               stream_name=self.settings['stream'],
                               logs=io.BytesIO(body))
        except ClientAuthenticationError as err:
            if err.status_code is None:
                return shipping.Outcome(shipping.UNAUTHORIZED, 'no token')
            return self._http_outcome(err)
        except HttpResponseError as err:
            if err.status_code is None:
                return shipping.Outcome(shipping.RETRY, 'connection')
            return self._http_outcome(err)
        except ServiceRequestError:
            return shipping.Outcome(shipping.RETRY, 'connection')
        except ServiceResponseError as err:
            reason = 'timeout' if 'timed out' in str(err).lower() \
                else 'connection'
            return shipping.Outcome(shipping.RETRY, reason)
        return shipping.Outcome(shipping.ACCEPTED)

    @staticmethod
    def _http_outcome(err) -> shipping.Outcome:
        response = getattr(err, 'response', None)
        retry_after = response.headers.get('Retry-After') \
            if response is not None else None
        code = getattr(getattr(err, 'error', None), 'code', None)
        if code is None and response is not None:
            try:
                code = shipping.api_error_code(response.text())
            except Exception:
                code = None
        return shipping.outcome_for_status(err.status_code, retry_after, code)


def _give_up(attempt: int, started: float) -> bool:
    return (attempt + 1 >= MAX_ATTEMPTS or
            time.monotonic() - started > MAX_RETRY_SECONDS)


def ship(rows: list[dict], ledger_of: dict, transport,
         progress=None) -> tuple[shipping.Tally, shipping.Outcome | None]:
    """Ship rows; returns the tally and the refusal (401/403, wrong DCR or
    stream, schema) that stopped it, if any. progress(shipped, total) is
    called after each accepted call. Nothing is sent while a ledger of the
    batch cannot be written; a ledger write that fails stops it all."""
    tally = shipping.Tally()
    tally.add(offered=len(rows))

    def record(batch):
        now = time.time()
        by_ledger = {}
        for row in batch:
            by_ledger.setdefault(ledger_of[row['record_id']], []).append(
                row['record_id'])
        for session_ledger, ids in by_ledger.items():
            session_ledger.record(ids, now)
        if progress:
            progress(tally.shipped + len(batch), tally.offered)

    delivery = shipping.Delivery(
        transport=transport, record=record, tally=tally, give_up=_give_up,
        ready=lambda batch: _ledgers_problem(batch, ledger_of),
        set_aside=lambda row, size, reason: ledger.set_aside(
            ledger.rejected_path(ledger_of[row['record_id']].path), row,
            size, reason))
    try:
        delivery.ship(rows)
    except shipping.Refused as stop:
        return tally, stop.outcome
    except shipping.LedgerStop as stop:
        tally.leave(stop.reason, len(stop.rest))
        tally.add(unrecorded=len(stop.accepted))
    return tally, None


def _ledgers_problem(batch, ledger_of) -> str | None:
    for session_ledger in {ledger_of[row['record_id']] for row in batch}:
        problem = session_ledger.problem()
        if problem:
            return problem
    return None


def sync_lock() -> ledger.FileLock:
    return ledger.FileLock(store.home() / 'sync.lock')


def default_transport() -> SdkTransport:
    return SdkTransport(azure_logs.settings(), azure_logs.credential())
