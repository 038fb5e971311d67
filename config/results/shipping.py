"""Batching, retries and the ledger: the one piece of code the live push
(config/results/live_push.py) and ``clusterproof sync`` (config/results/backlog.py) share.

A transport posts one body and answers an Outcome; ``Delivery.ship`` turns
the rows into bodies under the API's 1 MB limit, retries what is worth
retrying (429, 5xx, dropped or refused connections, timeouts) honouring
Retry-After with exponential backoff and jitter, splits a batch the API
found too large (413), gives up on other 4xx with the API's error code,
stops everything on 401/403, and writes the ledger after every 204.
"""
from __future__ import annotations

import collections
import gzip
import json
import random
import threading
import time
from dataclasses import dataclass, field

# The Logs Ingestion API takes at most 1 MB per call, compressed or not;
# keeping the JSON itself under it keeps the gzip'd body under it too.
MAX_BODY = 1_000_000
# Below this, gzip costs more than it saves.
GZIP_FROM = 1024

ROLE = 'Monitoring Metrics Publisher'

ACCEPTED, RETRY, TOO_LARGE, REJECTED, UNAUTHORIZED, FORBIDDEN = (
    'accepted', 'retry', 'too_large', 'rejected', 'unauthorized', 'forbidden')


@dataclass
class Outcome:
    kind: str
    reason: str = ''                 # short, for the summary: '503', 'timeout'
    retry_after: float | None = None


def with_completion_time(row: dict) -> dict:
    """Log Analytics replaces a TimeGenerated older than 2 days by the
    receive time; the row keeps its real date in check_job_completion_time,
    which must therefore be set (the time it was stored, at worst)."""
    if row.get('check_job_completion_time'):
        return row
    return {**row, 'check_job_completion_time': row.get('TimeGenerated')}


def encode(rows: list[dict]) -> tuple[bytes, bool]:
    """The JSON array of rows, gzip'd when that makes it smaller."""
    return _packed(json.dumps(rows, separators=(',', ':'),
                              allow_nan=False).encode())


def encode_lines(batch: list) -> tuple[bytes, bool]:
    """The JSON array of stored lines (items ``(record_id, line, ...)``,
    each line one row's JSON as the store holds it): no row is decoded or
    encoded again. A LineChunk carries its body, encoded already."""
    encoded = getattr(batch, 'encoded', None)
    if encoded is not None:
        return encoded
    return _packed(b'[' + b','.join(item[1] for item in batch) + b']')


class LineChunk(list):
    """Stored-line items with their body, encoded where it was made (one
    thread builds every body: threads that each allocate megabyte bodies
    spread them over malloc arenas, and the process keeps them)."""

    def __init__(self, items):
        super().__init__(items)
        self.encoded = encode_lines(list(self))


def line_chunks(items, limit: int = MAX_BODY):
    """chunks() of stored-line items (``(record_id, line, ...)``); *items*
    may be an iterator."""
    return chunks(items, limit, size_of=lambda item: len(item[1]) + 1)


def _packed(raw: bytes) -> tuple[bytes, bool]:
    if len(raw) >= GZIP_FROM:
        packed = gzip.compress(raw, compresslevel=3)
        if len(packed) < len(raw):
            return packed, True
    return raw, False


def row_size(row: dict) -> int:
    return len(json.dumps(row, separators=(',', ':'),
                          allow_nan=False).encode()) + 1


def chunks(rows, limit: int = MAX_BODY, size_of=row_size):
    """Consecutive lists of rows whose JSON array stays under limit bytes
    (*size_of* a row: its JSON and a comma); a row alone over the limit is
    a chunk of its own (the API will say 413 and it is reported, not
    retried)."""
    chunk, size = [], 2
    for row in rows:
        grows = size_of(row)
        if chunk and size + grows > limit:
            yield chunk
            chunk, size = [], 2
        chunk.append(row)
        size += grows
    if chunk:
        yield chunk


def retry_after_seconds(value) -> float | None:
    """Retry-After in seconds (the API sends delta-seconds), else None."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


def api_error_code(body: bytes | str | None) -> str | None:
    """The Azure error code of an error response body, if it has one."""
    try:
        error = json.loads(body or b'').get('error') or {}
        return error.get('code')
    except (ValueError, AttributeError):
        return None


def outcome_for_status(status: int, retry_after=None,
                       error_code: str | None = None) -> Outcome:
    """What a status of the Logs Ingestion API means for the batch."""
    if status == 204 or 200 <= status < 300:
        return Outcome(ACCEPTED)
    reason = f'{status} {error_code}' if error_code else str(status)
    if status == 429 or status >= 500 or status == 408:
        return Outcome(RETRY, str(status), retry_after_seconds(retry_after))
    if status == 413:
        return Outcome(TOO_LARGE, reason)
    if status == 401:
        return Outcome(UNAUTHORIZED, reason)
    if status == 403:
        return Outcome(FORBIDDEN, reason)
    return Outcome(REJECTED, reason)


class Backoff:
    """Exponential backoff with jitter over a list of base intervals (the
    last repeats); Retry-After, when the API sends it, wins."""

    def __init__(self, intervals=(1, 2, 4, 8, 16, 30)):
        self.intervals = list(intervals) or [1]

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after + random.uniform(0, 0.25)
        base = self.intervals[min(attempt, len(self.intervals) - 1)]
        return base * random.uniform(0.5, 1.0)


class Tally:
    """Counts for the summary line; safe to update from several threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.offered = 0
        self.shipped = 0
        self.calls = 0
        self.left = collections.Counter()       # reason -> rows left
        self.failures = collections.Counter()   # reason -> failed calls
        self.last_failure = None

    def add(self, **counts):
        with self.lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def leave(self, reason: str, rows: int):
        with self.lock:
            self.left[reason] += rows

    def fail(self, reason: str):
        with self.lock:
            self.failures[reason] += 1
            self.last_failure = reason

    def left_total(self) -> int:
        return sum(self.left.values())

    @staticmethod
    def describe(counter) -> str:
        return ', '.join(f'{reason} x{count}'
                         for reason, count in counter.most_common())


class Throttle:
    """A transport shared by uploads in flight: after a 429 no call starts
    before its Retry-After (1 s when the API gives none) has passed, so
    that parallel uploads slow down together instead of hammering."""

    def __init__(self, transport):
        self.transport = transport
        self.lock = threading.Lock()
        self.not_before = 0.0

    def __call__(self, body: bytes, gzipped: bool) -> Outcome:
        with self.lock:
            pause = self.not_before - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        outcome = self.transport(body, gzipped)
        if outcome.kind == RETRY and outcome.reason == '429':
            wait = 1.0 if outcome.retry_after is None else outcome.retry_after
            with self.lock:
                self.not_before = max(self.not_before,
                                      time.monotonic() + wait)
        return outcome


class AuthStop(Exception):
    """401/403: the identity may not write to the rule; stop shipping."""

    def __init__(self, outcome: Outcome):
        super().__init__(outcome.reason)
        self.outcome = outcome


def auth_advice(outcome: Outcome) -> str:
    if outcome.reason == 'no token':
        return ('no Azure token: DefaultAzureCredential found no identity '
                '(managed identity, az login, workload identity or service '
                f"principal variables) with the '{ROLE}' role on the data "
                'collection rule')
    if outcome.kind == FORBIDDEN:
        return (f'Log Analytics refused the upload ({outcome.reason}): the '
                f"identity lacks the '{ROLE}' role on the data collection "
                f'rule (LOGS_DCR_RULE_ID)')
    return (f'Log Analytics refused the token ({outcome.reason}): check '
            f'the identity DefaultAzureCredential finds and its '
            f"'{ROLE}' role on the data collection rule")


@dataclass
class Delivery:
    """Ships rows through a transport and records each 204 in a ledger.

    transport(body: bytes, gzipped: bool) -> Outcome
    record(rows): called after each accepted call (writes the ledger)
    give_up(attempt, started) -> bool: stop retrying this batch
    wait(seconds) -> bool: sleep; False when told to stop meanwhile
    """
    transport: object
    record: object
    tally: Tally
    give_up: object
    wait: object = field(default=lambda seconds: (time.sleep(seconds),
                                                  True)[1])
    backoff: Backoff = field(default_factory=Backoff)
    max_body: int = MAX_BODY
    unauthorized_retries: int = 1
    encoder: object = encode          # a batch -> (body, gzipped)

    def ship(self, rows: list[dict]) -> None:
        """Ship rows (raises AuthStop on 401/403 after counting the rest)."""
        pending = list(chunks(rows, self.max_body))
        for index, batch in enumerate(pending):
            try:
                self.ship_chunk(batch)
            except AuthStop as stop:
                self.tally.leave(stop.outcome.reason, sum(
                    len(rest) for rest in pending[index + 1:]))
                raise

    def ship_chunk(self, batch: list) -> None:
        """Ship one chunk, and the halves a 413 makes of it (raises
        AuthStop on 401/403 after counting what of it is left)."""
        pending = [batch]
        while pending:
            part = pending.pop(0)
            try:
                halves = self._ship_batch(part)
            except AuthStop as stop:
                self.tally.leave(stop.outcome.reason, len(part) + sum(
                    len(rest) for rest in pending))
                raise
            pending[:0] = halves

    def _ship_batch(self, batch: list) -> list[list]:
        """Ships one batch; returns halves to ship instead after a 413."""
        body, gzipped = self.encoder(batch)
        started = time.monotonic()
        attempt = unauthorized = 0
        while True:
            outcome = self.transport(body, gzipped)
            self.tally.add(calls=1)
            if outcome.kind == ACCEPTED:
                self.record(batch)
                self.tally.add(shipped=len(batch))
                return []
            self.tally.fail(outcome.reason)
            if outcome.kind == TOO_LARGE and len(batch) > 1:
                middle = len(batch) // 2
                return [batch[:middle], batch[middle:]]
            if outcome.kind == UNAUTHORIZED and \
                    unauthorized < self.unauthorized_retries:
                unauthorized += 1    # a token that expired on the way
                continue
            if outcome.kind in (UNAUTHORIZED, FORBIDDEN):
                raise AuthStop(outcome)
            if outcome.kind != RETRY:
                self.tally.leave(outcome.reason, len(batch))
                return []
            if self.give_up(attempt, started) or not self.wait(
                    self.backoff.delay(attempt, outcome.retry_after)):
                self.tally.leave(outcome.reason, len(batch))
                return []
            attempt += 1
