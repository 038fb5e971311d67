"""The live push to Log Analytics: a ReFrame perflog handler that never
slows a run and loses nothing.

``clusterproof_httpjson`` is ReFrame's ``httpjson`` handler with the same
configuration keys (url, json_formatter, authorization_header,
extra_headers, backoff_intervals, retry_timeout, debug), changed where it
hurt: the rows of a test go out together as one JSON array; records go onto
a bounded queue that a background thread ships (config/results/azure/shipping.py), so the
ReFrame main loop never waits on the network; the endpoint being down at
start does not remove the handler; accepted rows go to the session's ledger;
and at session end it flushes for a bounded time (``flush_timeout``) and
prints one line saying what reached Log Analytics and what is left for
``clusterproof sync``.

Nothing the store holds is sent while the ledger cannot be written, and a
ledger write that fails stops that at once (the 204 of that one call is
lost: sync sends its rows again) until the ledger takes the lost ids. A row
the store could not write is shipped all the same: Log Analytics then holds
its only copy (config/results/handlers/unstored.py).
"""
from __future__ import annotations

import json
import queue
import sys
import threading
import time

import requests
from reframe.core.logging import (HTTPJSONHandler, getlogger,
                                  register_log_handler)

from .. import locks, settings
from ..handlers import unstored
from . import ledger, shipping
from ..store import files as store

HANDLER_TYPE = 'clusterproof_httpjson'
DEFAULT_FLUSH_TIMEOUT = settings.DEFAULT_FLUSH_TIMEOUT_S
DEFAULT_BACKOFF = [1, 2, 4, 8, 16, 30]
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0
QUEUE_BATCHES = 10_000


def _warn(message: str) -> None:
    try:
        getlogger().warning(message)
    except Exception:
        print(f'WARNING: {message}', file=sys.stderr, flush=True)


class RequestsTransport:
    """POSTs a body to the ingestion URL with a fresh Authorization header
    on every attempt and a connect and a read timeout."""

    def __init__(self, url, headers, authorization_header=None,
                 timeouts=(CONNECT_TIMEOUT, READ_TIMEOUT)):
        self.url = url
        self.headers = dict(headers)
        self.authorization_header = authorization_header
        self.timeouts = timeouts
        self.session = requests.Session()

    def __call__(self, body: bytes, gzipped: bool) -> shipping.Outcome:
        headers = dict(self.headers)
        if gzipped:
            headers['Content-Encoding'] = 'gzip'
        try:
            if self.authorization_header is not None:
                headers['Authorization'] = self.authorization_header()
        except Exception:
            # No token now (identity endpoint down, say): try again later.
            return shipping.Outcome(shipping.RETRY, 'no token')
        try:
            response = self.session.post(self.url, data=body, headers=headers,
                                         timeout=self.timeouts)
        except requests.exceptions.Timeout:
            return shipping.Outcome(shipping.RETRY, 'timeout')
        except requests.exceptions.ConnectionError:
            return shipping.Outcome(shipping.RETRY, 'connection')
        except requests.exceptions.RequestException as err:
            return shipping.Outcome(shipping.RETRY, type(err).__name__)
        return shipping.outcome_for_status(
            response.status_code, response.headers.get('Retry-After'),
            shipping.api_error_code(response.content))


class BatchingHTTPJSONHandler(HTTPJSONHandler):
    def __init__(self, url, session_id, extras=None, ignore_keys=None,
                 json_formatter=None, authorization_header=None,
                 extra_headers=None, debug=False,
                 backoff_intervals=DEFAULT_BACKOFF, retry_timeout=0,
                 flush_timeout=DEFAULT_FLUSH_TIMEOUT):
        super().__init__(url, extras, ignore_keys, json_formatter,
                         authorization_header, extra_headers, debug,
                         backoff_intervals, retry_timeout)
        self.session_id = session_id
        self.flush_timeout = float(flush_timeout)
        store_file = store.SessionFile(session_id).path
        self.ledger = ledger.Ledger(ledger.ledger_path(store_file))
        self.rejected_file = ledger.rejected_path(store_file)
        self.unstored = unstored.of(session_id)
        self.session_lock = locks.FileLock(
            ledger.session_lock_path(store_file))
        try:
            self.session_lock.acquire()
        except OSError:
            pass    # no lock where the store cannot write: nothing to sync
        self._ledger_problem = self.ledger.problem()
        self._unrecorded = []                # accepted, not in the ledger
        self.tally = shipping.Tally()
        self._queue = queue.Queue(maxsize=QUEUE_BATCHES)
        self._queued_ids = set()
        self._closing = threading.Event()    # session over: flush
        self._abandon = threading.Event()    # flush time over: stop
        self._stopped_by = None              # AuthStop outcome, if any
        self._thread = None
        self._closed = False
        self._complained = False
        self.delivery = shipping.Delivery(
            transport=RequestsTransport(url, self._headers,
                                        authorization_header),
            record=self._record,
            tally=self.tally,
            give_up=self._give_up,
            wait=lambda seconds: not self._abandon.wait(seconds),
            backoff=shipping.Backoff(backoff_intervals or DEFAULT_BACKOFF),
            set_aside=lambda row, size, reason: ledger.set_aside(
                self.rejected_file, row, size, reason))
        # Last: the store's end line waits for this handler to close.
        self.unstored.opened(HANDLER_TYPE)

    # The ReFrame main loop: format, queue, return.
    def emit(self, record):
        if self._debug:
            return super().emit(record)
        try:
            rows = self._rows_of(record)
            if not rows:
                return
            self.tally.add(offered=len(rows))
            if self._stopped_by is not None:
                self.tally.leave(self._stopped_by.reason, len(rows))
                return
            try:
                self._queue.put_nowait(rows)
            except queue.Full:
                self.tally.leave('queue full', len(rows))
                return
            self._start_sender()
        except Exception as err:
            # Never stop or fail the run for Log Analytics: the rows are in
            # the local store and `clusterproof sync` ships them later.
            if not self._complained:
                self._complained = True
                _warn(f'clusterproof: Log Analytics push: cannot queue a '
                      f'perf record ({type(err).__name__}: {err}); it stays '
                      f"in the local store for 'clusterproof sync'")

    def _rows_of(self, record) -> list[dict]:
        """The test's rows not queued yet: all of them at its first record
        (the formatter returns every row of the test), none afterwards."""
        text = self._json_format(record, self._extras, self._ignore_keys)
        if text is None:
            return []
        rows = json.loads(text)
        if isinstance(rows, dict):
            rows = [rows]
        fresh = []
        for row in rows:
            record_id = row.get('record_id')
            if record_id is not None and record_id in self._queued_ids:
                continue
            self._queued_ids.add(record_id)
            fresh.append(row)
        return fresh

    # The background sender.
    def _start_sender(self):
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._send_loop, name='clusterproof-log-analytics',
                daemon=True)
            self._thread.start()

    def _give_up(self, attempt, started) -> bool:
        if self._abandon.is_set():
            return True
        return bool(self._timeout) and \
            time.monotonic() - started > self._timeout

    def _next_rows(self) -> list[dict] | None:
        """Everything queued now, or None when the session is over and the
        queue is empty."""
        while True:
            try:
                rows = list(self._queue.get(timeout=0.2))
                break
            except queue.Empty:
                if self._closing.is_set():
                    return None
        while True:
            try:
                rows.extend(self._queue.get_nowait())
            except queue.Empty:
                return rows

    # The ledger: written after each 204, and needed before each call.
    def _record(self, rows):
        in_store = self.unstored.shipped(row.get('record_id') for row in rows)
        if in_store:
            self.ledger.record(in_store)

    def _ledger_ready(self) -> bool:
        """True when the ledger can be written now: the ids it lost (if
        any) are written first."""
        if self._unrecorded:
            try:
                self.ledger.record(self._unrecorded)
            except OSError:
                return False
            self.tally.add(unrecorded=-len(self._unrecorded))
            self._unrecorded = []
            self._ledger_problem = None
        if self._ledger_problem:
            self._ledger_problem = self.ledger.problem()
        return self._ledger_problem is None

    def _ship(self, rows):
        """Ships rows; while the ledger cannot be written, only those the
        store could not hold (Log Analytics is then their only copy)."""
        if not self._ledger_ready():
            unstored = [row for row in rows
                        if self.unstored.is_unstored(row.get('record_id'))]
            held = len(rows) - len(unstored)
            if held:
                self.tally.leave('ledger not writable', held)
            rows = unstored
            if not rows:
                return
        try:
            self.delivery.ship(rows)
        except shipping.LedgerStop as stop:
            ids = [str(row.get('record_id')) for row in stop.accepted
                   if not self.unstored.is_unstored(row.get('record_id'))]
            self._unrecorded += ids
            self.tally.add(unrecorded=len(ids))
            self._ledger_problem = stop.reason
            _warn(f'clusterproof: {stop.reason}: sending only the rows the '
                  f'local store could not hold until it can be written'
                  + (f'; the {len(ids)} row(s) of the last accepted call '
                     f"are not in it, and 'clusterproof sync' would send "
                     f'them again' if ids else ''))
            if stop.rest:
                self._ship(stop.rest)

    def _send_loop(self):
        while not self._abandon.is_set():
            rows = self._next_rows()
            if rows is None:
                return
            try:
                self._ship(rows)
            except shipping.AuthStop as stop:
                self._stopped_by = stop.outcome
                _warn(f'clusterproof: {shipping.auth_advice(stop.outcome)}; '
                      f'the live push stops for this session, the rows stay '
                      f"in the local store for 'clusterproof sync'")
                self._leave_queued(stop.outcome.reason)
                return
            except Exception as err:
                self.tally.leave(type(err).__name__, len(rows))

    def _leave_queued(self, reason):
        while True:
            try:
                self.tally.leave(reason, len(self._queue.get_nowait()))
            except queue.Empty:
                return

    # Session end (ReFrame closes its perflog handlers at exit).
    def flush_and_stop(self) -> None:
        if self._thread is not None:
            self._closing.set()
            try:
                self._thread.join(self.flush_timeout)
            except KeyboardInterrupt:
                pass
            self._abandon.set()
            self._thread.join(1.0)
        unsent = (self.tally.offered - self.tally.shipped -
                  self.tally.left_total())
        if unsent > 0:
            # Queued behind a batch that kept failing: the same reason.
            self.tally.leave(self.tally.last_failure or 'flush time over',
                             unsent)
        if self._unrecorded:
            self._ledger_ready()     # the disk may have room again now

    def summary(self) -> str:
        tally = self.tally
        line = (f'Log Analytics: {tally.shipped} of {tally.offered} records '
                f'shipped')
        if tally.left_total():
            line += (f"; {tally.left_total()} left for 'clusterproof sync' "
                     f'({shipping.Tally.describe(tally.left)})')
        if tally.aside:
            line += ('\nLog Analytics: set aside for good (noted in '
                     f'{self.rejected_file}): '
                     f'{shipping.Tally.describe(tally.aside)}')
        if tally.unrecorded:
            line += (f'\nLog Analytics: {tally.unrecorded} of the shipped '
                     f'records are not in the ledger ({self.ledger.path} '
                     f"could not be written): 'clusterproof sync' will send "
                     f'them again')
        return line

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            self.flush_and_stop()
            if self.tally.offered:
                try:
                    print(self.summary(), flush=True)
                except (OSError, ValueError):
                    pass      # stdout closed (a pipe that went away)
        finally:
            try:
                self.session_lock.release(remove=True)
            finally:
                self.unstored.closed(HANDLER_TYPE)
                super().close()


@register_log_handler(HANDLER_TYPE)
def _create_handler(site_config, config_prefix):
    """The handler, or None (ReFrame then goes on without it) when it
    cannot be made: Log Analytics must never stop a run."""
    try:
        return _handler_from(site_config, config_prefix)
    except Exception as err:
        _warn(f'clusterproof: no live push to Log Analytics in this session '
              f'({type(err).__name__}: {err}); the local store keeps what '
              f"it can write for 'clusterproof sync'")
        return None


def _handler_from(site_config, config_prefix):
    def option(name, default=None):
        value = site_config.get(f'{config_prefix}/{name}')
        return default if value is None else value

    return BatchingHTTPJSONHandler(
        url=option('url'),
        session_id=option('session_id'),
        extras=option('extras', {}),
        ignore_keys=option('ignore_keys', []),
        json_formatter=option('json_formatter'),
        authorization_header=option('authorization_header'),
        extra_headers=option('extra_headers', {}),
        debug=option('debug', False),
        backoff_intervals=option('backoff_intervals', DEFAULT_BACKOFF),
        retry_timeout=option('retry_timeout', 0),
        flush_timeout=option('flush_timeout', DEFAULT_FLUSH_TIMEOUT))
