"""Batching, retries and the ledger: the one piece of code the live push
(config/results/azure/live_push.py) and ``clusterproof sync`` (config/results/azure/sync.py) share.

A transport posts one body and answers an Outcome; ``Delivery.ship`` turns
the rows into bodies under the API's 1 MB limit, retries what is worth
retrying (429, 5xx, dropped or refused connections, timeouts) honouring
Retry-After with exponential backoff and jitter, splits a batch the API
found too large (413), sets aside a single row over the limit, stops
everything on a refusal that retrying cannot cure (401/403, a wrong DCR or
stream, a schema error: any other 4xx), and writes the ledger after every
204. Nothing is sent while the ledger cannot be written (``ready``), and a
ledger write that fails stops the delivery at once (LedgerStop).
"""
from __future__ import annotations

import array
import collections
import json
import random
import threading
import time
import zlib
from dataclasses import dataclass, field

from .. import batching

# The Logs Ingestion API takes at most 1 MB per call, "both compressed and
# uncompressed data" (https://learn.microsoft.com/azure/azure-monitor/
# fundamentals/service-limits#logs-ingestion-api): the JSON itself stays
# under it, so a faster gzip level buys no larger calls.
MAX_BODY = 1_000_000
# Below this, gzip costs more than it saves.
GZIP_FROM = 1024
GZIP_WBITS = 16 + zlib.MAX_WBITS      # a gzip stream, its CRC in one pass
# The API takes a body gzip'd or not; azure-monitor-ingestion gzips the
# lists it is given at zlib's default level, 6 (_create_gzip_requests:
# zlib.compressobj(wbits=16 + zlib.MAX_WBITS), sdk/monitor/
# azure-monitor-ingestion/azure/monitor/ingestion/_helpers.py in
# Azure/azure-sdk-for-python, commit 685dcb62d21050314945aa0d5c4f4b98ac0413a7,
# and so in 1.1.0). On 1 MB bodies of stored rows (tests/bench/bench_sync.py,
# 138 MB in all) level 3 took 0.44 s for 5.0 MB, level 1 0.42 s for 5.4 MB
# and level 6 1.08 s for 3.6 MB: 3 costs what 1 does and sends less.
GZIP_LEVEL = 3

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
    encoded again. A LineChunk carries its body, made already."""
    packed = getattr(batch, 'packed', None)
    return packed if packed is not None else _packed(
        _joined(item[1] for item in batch))


def _joined(lines) -> bytes:
    return b'[' + b','.join(lines) + b']'


class LineChunk:
    """Stored-line items ``(record_id, line, the session's Ledger)`` with
    their body (encode_lines), made where the chunk was made (sync's
    reading process): one thread allocates every megabyte array (threads
    that each allocate them spread them over malloc arenas, and the
    process keeps them), and the upload that takes the chunk sends at once.

    Pickled, it is its record_ids, ledgers, line lengths and body, not its
    lines: the lines are cut from the body again only if they are asked
    for (a 413's halves, a row set aside), which is rare."""

    def __init__(self, items):
        self.record_ids = [item[0] for item in items]
        self.ledgers = [item[2] for item in items]
        self._lines = [item[1] for item in items]
        self.packed = _packed(_joined(self._lines))

    def __len__(self) -> int:
        return len(self.record_ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return LineChunk(list(zip(self.record_ids[index],
                                      self.lines()[index],
                                      self.ledgers[index])))
        return self.record_ids[index], self.lines()[index], \
            self.ledgers[index]

    def __iter__(self):
        return zip(self.record_ids, self.lines(), self.ledgers)

    def lines(self) -> list[bytes]:
        if self._lines is None:
            self._lines = _cut(self.packed, self._lengths)
        return self._lines

    def __reduce__(self):
        lengths = (self._lengths if self._lines is None else
                   array.array('I', map(len, self._lines))).tobytes()
        return _unpickled_chunk, (self.record_ids, self.ledgers, lengths,
                                  self.packed)


def _unpickled_chunk(record_ids, ledgers, lengths, packed) -> LineChunk:
    chunk = LineChunk.__new__(LineChunk)
    chunk.record_ids, chunk.ledgers, chunk.packed = record_ids, ledgers, \
        packed
    chunk._lines, chunk._lengths = None, array.array('I', lengths)
    return chunk


def _cut(packed: tuple[bytes, bool], lengths) -> list[bytes]:
    """The lines of a body _joined() made, from their lengths."""
    body, gzipped = packed
    if gzipped:
        body = zlib.decompress(body, GZIP_WBITS)
    lines, at = [], 1                   # past the '['
    for length in lengths:
        lines.append(body[at:at + length])
        at += length + 1                # and its ','
    return lines


def _packed(raw: bytes) -> tuple[bytes, bool]:
    if len(raw) >= GZIP_FROM:
        packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, GZIP_WBITS)
        packed = packer.compress(raw) + packer.flush()
        if len(packed) < len(raw):
            return packed, True
    return raw, False


def row_size(row: dict) -> int:
    return len(json.dumps(row, separators=(',', ':'),
                          allow_nan=False).encode()) + 1


def chunks(rows, limit: int = MAX_BODY, size_of=row_size):
    """Consecutive lists of rows whose JSON array stays under limit bytes
    (*size_of* a row: its JSON and a comma; the brackets two more); a row
    alone over the limit is a chunk of its own (the API will say 413 and it
    is reported, not retried)."""
    return batching.runs_under(rows, limit, size_of, start=2)


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
        self.unrecorded = 0      # accepted, but the ledger could not say so
        self.left = collections.Counter()       # reason -> rows left
        self.aside = collections.Counter()      # reason -> rows set aside
        self.failures = collections.Counter()   # reason -> failed calls
        self.last_failure = None

    def add(self, **counts):
        with self.lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def leave(self, reason: str, rows: int):
        with self.lock:
            self.left[reason] += rows

    def put_aside(self, reason: str, rows: int = 1):
        with self.lock:
            self.aside[reason] += rows

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


class Refused(Exception):
    """A refusal no retry cures (401/403, a wrong DCR or stream, a schema
    error): stop shipping and say what to change."""

    def __init__(self, outcome: Outcome):
        super().__init__(outcome.reason)
        self.outcome = outcome


AuthStop = Refused


class LedgerStop(Exception):
    """The ledger cannot be written: nothing more is sent. ``accepted`` are
    the rows of the call whose 204 could not be recorded (they will be sent
    again), ``rest`` the rows not sent."""

    def __init__(self, reason: str, accepted=(), rest=()):
        super().__init__(reason)
        self.reason = reason
        self.accepted = list(accepted)
        self.rest = list(rest)


def auth_advice(outcome: Outcome) -> str:
    if outcome.kind == REJECTED:
        return refusal_advice(outcome)
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


def refusal_advice(outcome: Outcome) -> str:
    """What to change after a 4xx that retrying cannot cure."""
    reason = outcome.reason
    if 'InvalidStream' in reason:
        fix = ('LOGS_DCR_STREAM_NAME names no stream of the data collection '
               'rule: set it to the stream `clusterproof deploy` printed '
               '(default Custom-ReFrameResults_CL)')
    elif reason.startswith('404'):
        fix = ('DATA_COLLECTION_ENDPOINT or LOGS_DCR_RULE_ID names no data '
               'collection rule there: set them from `clusterproof deploy`')
    elif reason.startswith('400'):
        fix = ("the rule's stream does not take these rows (a schema "
               'mismatch): redeploy with `clusterproof deploy`')
    else:
        fix = 'check the Log Analytics settings (`clusterproof deploy`)'
    return (f'Log Analytics refused the upload permanently ({reason}): '
            f'{fix}; retrying will not help')


@dataclass
class Delivery:
    """Ships rows through a transport and records each 204 in a ledger.

    transport(body: bytes, gzipped: bool) -> Outcome
    record(rows): called after each accepted call (writes the ledger;
        an OSError from it stops the delivery: LedgerStop)
    give_up(attempt, started) -> bool: stop retrying this batch
    wait(seconds) -> bool: sleep; False when told to stop meanwhile
    ready(rows) -> str | None: why nothing may be sent now (the ledger
        cannot be written), checked before each batch; LedgerStop then
    set_aside(row, size, outcome): keeps a row alone over the limit from
        every later try (413 for a single row)
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
    ready: object = field(default=lambda rows: None)
    set_aside: object = None
    encoder: object = encode          # a batch -> (body, gzipped)

    def ship(self, rows: list[dict]) -> None:
        """Ship rows. Raises Refused after counting the rest as left, and
        LedgerStop (nothing counted: the caller decides) when the ledger
        cannot be written."""
        pending = list(chunks(rows, self.max_body))
        for index, batch in enumerate(pending):
            problem = self.ready(batch)
            if problem:
                raise LedgerStop(problem, rest=[
                    row for rest in pending[index:] for row in rest])
            try:
                self.ship_chunk(batch)
            except Refused as stop:
                self.tally.leave(stop.outcome.reason, sum(
                    len(rest) for rest in pending[index + 1:]))
                raise
            except LedgerStop as stop:
                stop.rest += [row for rest in pending[index + 1:]
                              for row in rest]
                raise

    def ship_chunk(self, batch: list) -> None:
        """Ship one chunk, and the halves a 413 makes of it (raises
        Refused after counting what of it is left, LedgerStop when the
        ledger cannot be written)."""
        pending = [batch]
        while pending:
            part = pending.pop(0)
            try:
                halves = self._ship_batch(part)
            except Refused as stop:
                self.tally.leave(stop.outcome.reason, len(part) + sum(
                    len(rest) for rest in pending))
                raise
            except LedgerStop as stop:
                stop.rest = [row for rest in pending for row in rest]
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
                self.tally.add(shipped=len(batch))
                try:
                    self.record(batch)
                except OSError as err:
                    raise LedgerStop(f'cannot write the ledger: '
                                     f'{err.strerror or err}',
                                     accepted=batch) from err
                return []
            self.tally.fail(outcome.reason)
            if outcome.kind == TOO_LARGE and len(batch) > 1:
                middle = len(batch) // 2
                return [batch[:middle], batch[middle:]]
            if outcome.kind == TOO_LARGE:
                self._set_aside(batch[0], outcome)
                return []
            if outcome.kind == REJECTED:
                raise Refused(outcome)
            if outcome.kind == UNAUTHORIZED and \
                    unauthorized < self.unauthorized_retries:
                unauthorized += 1    # a token that expired on the way
                continue
            if outcome.kind in (UNAUTHORIZED, FORBIDDEN):
                raise Refused(outcome)
            if outcome.kind != RETRY:
                self.tally.leave(outcome.reason, len(batch))
                return []
            if self.give_up(attempt, started) or not self.wait(
                    self.backoff.delay(attempt, outcome.retry_after)):
                self.tally.leave(outcome.reason, len(batch))
                return []
            attempt += 1

    def _set_aside(self, row, outcome: Outcome) -> None:
        # a row, or a stored-line item (record_id, line, ...)
        size = row_size(row) if isinstance(row, dict) else len(row[1]) + 1
        reason = (f'{outcome.reason}: one row of {size} bytes, over the '
                  f"API's {self.max_body} per call")
        self.tally.put_aside(reason)
        if self.set_aside is None:
            return
        try:
            self.set_aside(row, size, reason)
        except OSError:
            pass       # tried again, and noted again, by the next sync
