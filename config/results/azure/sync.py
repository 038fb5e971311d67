"""What Log Analytics has not accepted yet, and shipping it: the logic of
`clusterproof sync` (scripts/cli/sync.py is its command line).

The backlog is every stored row whose record_id is in no ledger, from
sessions that are over (a running session's live push holds its lock and
ships it itself). Rows go out through azure-monitor-ingestion's
LogsIngestionClient, in the bodies and with the retries of
config/results/azure/shipping.py, and each accepted call is written to the ledger of the
sessions its rows came from before the next call: an interrupted sync
resumes without loss and without sending anything twice.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import multiprocessing
import queue
import signal
import sys
import threading
import traceback
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import locks
from . import ledger, shipping
from ..store import files as store, verbatim

MAX_ATTEMPTS = 6           # calls per body before it is left for next time
MAX_RETRY_SECONDS = 300
IN_FLIGHT = 3              # uploads at once (the API allows far more)


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


def sendable(found: dict, line: bytes, changed: bool) -> tuple:
    """(record_id, the line to send) of a row the store's reader read: a
    row whose values it nulled (NaN, wrong type), whose record_id it made
    a string or that lacks its completion time is encoded again."""
    if changed or not found.get('check_job_completion_time'):
        line = json.dumps(shipping.with_completion_time(found),
                          separators=(',', ':'), allow_nan=False).encode()
    return found.get('record_id'), line


class StoredBacklog:
    """The backlog as sync reads it: session by session and line by line,
    never the whole of it in memory. Sessions still running (their lock
    held) are listed in *running* and left out."""

    def __init__(self, session: str | None = None,
                 since: dt.date | None = None):
        files = store.session_files()
        self.shipped = set(accepted_everywhere(files))
        self.running = []
        self.files = []
        for path in files:
            if not _wanted(path, session, since):
                continue
            if locks.is_locked(ledger.session_lock_path(path)):
                self.running.append(path.stem)
            else:
                self.files.append(path)
        self.sessions = {}          # session -> rows read so far
        self.set_aside = {}         # record_id -> its <session>.rejected

    def chunks(self, limit: int = shipping.MAX_BODY):
        """Lists of (record_id, line to send, the session's Ledger) of
        every row in no ledger, each list's JSON array (the lines joined
        by commas) under *limit* bytes (shipping.chunks; a row alone over
        it is a list of its own); a row stored twice comes once.

        One loop per session file, its lines read a megabyte at a time: a
        line in the store writer's own form (verbatim) goes as it is,
        never decoded; any other is read by the store's reader
        (store.LineReader: a line that is no row is skipped with a
        warning) and sent as sendable() says. The one place sync reads
        the store's lines."""
        shipped, shippable = self.shipped, verbatim.shippable
        chunk, size = [], 2
        for path in self.files:
            session_ledger = ledger.Ledger(ledger.ledger_path(path))
            aside = ledger.read_rejected(ledger.rejected_path(path))
            reader = store.LineReader(path)
            number = rows = 0
            for block in store.file_blocks(path):
                for raw in block:
                    number += 1
                    record_id = shippable(raw)
                    if record_id is not None:
                        line = raw[:-1]
                    else:
                        read = reader.read(number, raw)
                        if read is None:
                            continue
                        record_id, line = sendable(*read)
                    if not record_id or record_id in shipped:
                        continue
                    if record_id in aside:
                        self.set_aside[record_id] = aside[record_id]
                        continue
                    shipped.add(record_id)
                    rows += 1
                    grows = len(line) + 1
                    if chunk and size + grows > limit:
                        yield chunk
                        chunk, size = [], 2
                    chunk.append((record_id, line, session_ledger))
                    size += grows
            reader.done()
            if rows:
                self.sessions[path.stem] = \
                    self.sessions.get(path.stem, 0) + rows
        if chunk:
            yield chunk

    def chunks_from_a_process(self, limit: int = shipping.MAX_BODY
                              ) -> 'ReadingProcess':
        """chunks() as shipping.LineChunks, their bodies made, read and
        packed by a process of its own, started now (ReadingProcess)."""
        return ReadingProcess(self, limit)

    def items(self):
        """(record_id, line to send, the session's Ledger) of every row in
        no ledger, one by one (chunks())."""
        for chunk in self.chunks():
            yield from chunk

    def estimate(self) -> int:
        """About how many rows are left (lines less ledger lines), without
        reading a row: for a progress line."""
        total = 0
        for path in self.files:
            total += _count_lines(path) - _count_lines(
                ledger.ledger_path(path))
        return max(total, 0)


class ReadingProcess:
    """A backlog's chunks(), read and packed into shipping.LineChunks by a
    process forked when this is made (it reads the store as this one
    would), so that the reading and the gzip take a core of their own
    instead of the uploads' turns at the interpreter (about 7 µs a line
    and 2 ms a body's gzip beside an upload's 2 ms a call), and start
    while the Azure SDK is imported. A chunk goes through the pipe without its lines
    (record_ids, lengths and the body: a twentieth of its size), and the
    pipe is made to hold a megabyte, so the process reads that far ahead
    and never further: memory stays bounded. An iterator of the chunks;
    the backlog's sessions and set_aside are the process's once the last
    one is read, and an error of its reading is raised here. close() (or
    leaving a with block) stops the process."""

    def __init__(self, backlog: StoredBacklog, limit: int):
        self.backlog = backlog
        context = multiprocessing.get_context('fork')
        self._receiving, sending = context.Pipe(duplex=False)
        _widen(sending)
        sys.stdout.flush()          # nothing buffered is written twice
        sys.stderr.flush()
        self._reader = context.Process(
            target=_send_chunks, args=(backlog, sending, limit),
            daemon=True, name='clusterproof-sync-reader')
        self._reader.start()
        sending.close()
        self._received = self._receive()

    def __iter__(self):
        return self

    def __next__(self) -> shipping.LineChunk:
        return next(self._received)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._received.close()
        self._stop()

    def _receive(self):
        try:
            while True:
                try:
                    kind, payload = self._receiving.recv()
                except EOFError:
                    self._reader.join()
                    raise RuntimeError(
                        'the process reading the store for sync stopped '
                        f'(exit code {self._reader.exitcode}) before it had '
                        'read every session; nothing it read is lost: run '
                        '`clusterproof sync` again') from None
                if kind == 'chunk':
                    yield payload
                elif kind == 'done':
                    self.backlog.sessions, self.backlog.set_aside = payload
                    return
                else:
                    raise payload
        finally:
            self._stop()

    def _stop(self) -> None:
        self._receiving.close()
        if self._reader.is_alive():
            self._reader.terminate()
        self._reader.join()


PIPE_BYTES = 1 << 20


def _widen(connection) -> None:
    """Let the pipe hold PIPE_BYTES (Linux; /proc/sys/fs/pipe-max-size is
    1 MiB unless changed): else it holds 64 KiB, and a writer that is
    ahead waits for the reader at every body. Best effort."""
    import fcntl
    try:
        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError):
        pass


def _send_chunks(backlog: StoredBacklog, sending, limit: int) -> None:
    # Ctrl-C is the sync's to handle: it stops this process
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for chunk in backlog.chunks(limit):
            sending.send(('chunk', shipping.LineChunk(chunk)))
        sending.send(('done', (backlog.sessions, backlog.set_aside)))
    except BrokenPipeError:
        pass                    # the sync stopped reading: it is done
    except Exception as err:
        try:
            sending.send(('error', err))
        except Exception:       # an error that cannot be pickled
            sending.send(('error', RuntimeError(
                'reading the store for sync failed:\n'
                + traceback.format_exc())))
    finally:
        sending.close()


def _count_lines(path: Path) -> int:
    if not store.regular_files([path], warn=lambda message: None):
        return 0        # missing, a directory, a FIFO: never opened
    try:
        with open(path, 'rb') as fp:
            return sum(block.count(b'\n') for block in
                       iter(lambda: fp.read(1 << 20), b''))
    except OSError:
        return 0


def find_backlog(session: str | None = None,
                 since: dt.date | None = None) -> Backlog:
    """The backlog held in memory as rows (for small ones: tests, the
    benchmarks' reference)."""
    stored = StoredBacklog(session, since)
    found = Backlog(running=stored.running, set_aside=stored.set_aside)
    for record_id, line, session_ledger in stored.items():
        found.rows.append(json.loads(line))
        found.ledger_of[record_id] = session_ledger
    found.sessions = stored.sessions
    return found


class SdkTransport:
    """One body per call through LogsIngestionClient (azure-core adds its
    own retries of 500/503/504 and honours Retry-After); every failure it
    gives up on becomes an Outcome for config/results/azure/shipping.py's retries."""

    def __init__(self, settings: dict, credential):
        from azure.monitor.ingestion import LogsIngestionClient
        self.settings = settings
        # one client for every upload in flight: its requests session
        # pools connections (10 by default) and is safe across threads
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
        ready=lambda batch: _ledgers_problem(
            ledger_of[row['record_id']] for row in batch),
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


def _ledgers_problem(ledgers) -> str | None:
    """Why one of these ledgers cannot be written now."""
    for session_ledger in set(ledgers):
        problem = session_ledger.problem()
        if problem:
            return problem
    return None


# While uploads are in flight, a thread waiting for the GIL (an upload
# whose answer came, to write its ledger and send the next body) waits at
# most this long for the thread that holds it (the one taking the bodies
# in, or reading them when chunks() is read here); Python's default (5 ms)
# added several such waits to every call.
SWITCH_INTERVAL = 0.0005


def ship_stored(chunks, transport, progress=None, total: int = 0,
                in_flight: int = IN_FLIGHT
                ) -> tuple[shipping.Tally, shipping.Outcome | None]:
    """Ship the stored-line *chunks* (StoredBacklog.chunks(), or
    chunks_from_a_process(), whose bodies are made already) with
    *in_flight* uploads at once, sharing 429s (shipping.Throttle); each
    204 is in its ledger before that upload takes its next body, as ship()
    does. This thread takes each chunk in, packing its body
    (shipping.LineChunk) when it is not made yet, while the uploads send;
    memory holds the bodies in flight and as many waiting, never the
    backlog. progress(shipped, total) after each
    accepted call. An exception an upload did not expect (a bug, not an
    answer of the API) stops every upload, leaving their rows, and is
    raised here once they are done (no upload is left waiting for it)."""
    tally = shipping.Tally()
    ledger_lock = threading.Lock()

    def record(batch):
        now = time.time()
        by_ledger = {}
        for record_id, session_ledger in zip(batch.record_ids,
                                             batch.ledgers):
            by_ledger.setdefault(session_ledger, []).append(record_id)
        with ledger_lock:
            for session_ledger, ids in by_ledger.items():
                session_ledger.record(ids, now)
            if progress:
                progress(tally.shipped + len(batch),
                         max(total, tally.offered))

    delivery = shipping.Delivery(
        transport=shipping.Throttle(transport), record=record, tally=tally,
        give_up=_give_up, encoder=shipping.encode_lines,
        set_aside=lambda item, size, reason: ledger.set_aside(
            ledger.rejected_path(item[2].path), {'record_id': item[0]},
            size, reason))
    waiting = queue.Queue(maxsize=in_flight)
    stopped = []            # the refusal that stopped every upload
    ledger_stopped = []     # why a ledger could not be written
    crashed = []            # what an upload did not expect

    def upload():
        while (batch := waiting.get()) is not None:
            if stopped or ledger_stopped or crashed:
                tally.leave(stopped[0].reason if stopped else
                            ledger_stopped[0] if ledger_stopped else
                            type(crashed[0]).__name__, len(batch))
                continue
            problem = _ledgers_problem(batch.ledgers)
            if problem:     # nothing is sent that its ledger cannot hold
                ledger_stopped.append(problem)
                tally.leave(problem, len(batch))
                continue
            try:
                delivery.ship_chunk(batch)
            except shipping.Refused as stop:
                stopped.append(stop.outcome)
            except shipping.LedgerStop as stop:
                ledger_stopped.append(stop.reason)
                tally.add(unrecorded=len(stop.accepted))
                tally.leave(stop.reason, len(stop.rest))
            except Exception as err:    # raised below, in this thread
                crashed.append(err)

    # daemon: an interrupted sync exits at once; the ledgers hold every
    # 204 already written, and a torn ledger line does not count
    uploads = [threading.Thread(target=upload, daemon=True)
               for _ in range(max(1, in_flight))]
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL))
    try:
        for thread in uploads:
            thread.start()
        for batch in chunks:
            tally.add(offered=len(batch))
            waiting.put(batch if isinstance(batch, shipping.LineChunk)
                        else shipping.LineChunk(batch))
        for _ in uploads:
            waiting.put(None)
        for thread in uploads:
            thread.join()
    finally:
        sys.setswitchinterval(switch_interval)
    if crashed:
        raise crashed[0]
    return tally, (stopped[0] if stopped else None)


def sync_lock() -> locks.FileLock:
    return locks.FileLock(store.home() / 'sync.lock')


def default_transport() -> SdkTransport:
    from . import ingestion
    return SdkTransport(ingestion.settings(), ingestion.credential())
