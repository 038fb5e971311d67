"""The store handler: the first perflog handler, which keeps every row on
local disk before anything goes over the network."""
from __future__ import annotations

import logging
import os
import sys
import time

from reframe.core.logging import register_log_handler

from ..azure import ledger
from . import records, unstored
from ..store import sessions, files as store

SESSION_ID = store.new_session_id()
STORE_HANDLER = 'clusterproof_store'


class StoreHandler(logging.Handler):
    """Appends the rows of each test to this session's store file, all of
    them at the test's first perf record (see records.rows_of_test), and says
    at the end where they went (ReFrame closes perflog handlers at exit).

    It never raises into ReFrame's handler chain (a LoggingError there would
    keep the record from every handler after it: the live push, the
    perflog): a row it cannot write (full disk, read-only store) is kept in
    memory (unstored.py), tried again at every record and at the end, and
    the end line names how many rows exist only in Log Analytics, only in
    the perflog, or nowhere."""

    def __init__(self, session_id: str, perflog_dir=None):
        super().__init__()
        self.session_id = session_id
        self.file = store.SessionFile(session_id)
        self.unstored = unstored.of(session_id)
        self.ledger = ledger.Ledger(ledger.ledger_path(self.file.path))
        self.unstored.opened(STORE_HANDLER)
        self.unstored.at_end(self._end)
        self.perflog_dir = perflog_dir
        self._written = set()
        self._seen = set()
        self._jobs = set()
        self._began = time.time()
        self._error = None           # the last write error, for the end line
        self._warned = False
        self._closed = False
        self.out = None

    def close(self):
        try:
            if not self._closed:
                self._closed = True
                self.unstored.closed(STORE_HANDLER)
        finally:
            super().close()

    def _end(self):
        self._write_unstored()
        self.summarise(self.out)

    def summarise(self, out=None):
        """Print the store file, the session id and the row count, and link
        the session to ReFrame's own session UUID; then, if some rows could
        not be written, where they are."""
        out = out or sys.stdout
        if self._written:
            self._record_session(out)
        unstored = list(self.unstored.rows)
        if unstored:
            print(self.unstored_line(unstored), file=out, flush=True)

    def unstored_line(self, unstored) -> str:
        in_azure = sum(rid in self.unstored.in_azure_only
                       for rid in unstored)
        rest = len(unstored) - in_azure
        perflog = self.perflog_dir
        in_perflog = rest if perflog and os.access(perflog, os.W_OK) else 0
        return (f'clusterproof: WARNING: {len(unstored)} row(s) '
                f'{store.UNSTORED_MARK} {self.file.path} ({self._error}): '
                f'{in_azure} exist only in Log Analytics, {in_perflog} only '
                f'in the perflog ({perflog}), {rest - in_perflog} nowhere')

    def _record_session(self, out):
        found = sessions.find_reframe_session(
            self._jobs, self._began - 1,
            extra=sessions.configured_report_files())
        reframe_uuid = found[0] if found else None
        try:
            sessions.record({
                'session_id': self.session_id,
                'reframe_session_uuid': reframe_uuid,
                'report_file': str(found[1]) if found else None,
                'store_file': str(self.file.path),
                'rows': len(self._written),
            })
        except OSError as err:
            print(f'clusterproof: cannot write the session map: {err}',
                  file=out)
        line = (f'clusterproof: {len(self._written)} row(s) stored in '
                f'{self.file.path} (session {self.session_id}')
        line += f', ReFrame session {reframe_uuid})' if reframe_uuid else ')'
        print(line, file=out, flush=True)

    def emit(self, record):
        try:
            if records.is_dry_run(record):
                return
            fresh = [row for row in records.rows_of_test(record,
                                                         self.session_id)
                     if row['record_id'] not in self._seen]
            if fresh:
                self._seen.update(row['record_id'] for row in fresh)
                self._jobs.update((str(row['check_name']),
                                   str(row['check_jobid'])) for row in fresh)
                self.unstored.keep(fresh)
            # This test's rows first; once they went in, the disk has room
            # for the older ones too (a long session on a full disk does
            # not rewrite an ever longer backlog at every test).
            if self._write_unstored(fresh):
                self._write_unstored()
        except Exception as err:          # never into ReFrame's chain
            self._complain(f'{type(err).__name__}: {err}')

    def _write_unstored(self, rows=None) -> bool:
        """Writes rows (default: every row kept so far) in one append (one
        fsync per test, not per row: the main loop's time); False when the
        store could not, or there was nothing to write."""
        with self.unstored.lock:
            rows = [row for row in (rows if rows is not None else
                                    list(self.unstored.rows.values()))
                    if self.unstored.is_unstored(row['record_id'])]
            if not rows:
                return False
            try:
                self.file.append_rows(rows)
            except (OSError, TypeError, ValueError) as err:
                self._error = getattr(err, 'strerror', None) or str(err)
                self._complain(self._error)
                return False
            ids = [row['record_id'] for row in rows]
            self._written.update(ids)
            shipped = self.unstored.stored(ids)
        if shipped:
            try:
                self.ledger.record(shipped)
            except OSError:
                pass        # at least once: sync sends them again
        return True

    def _complain(self, what):
        if self._warned:
            return
        self._warned = True
        print(f'clusterproof: WARNING: cannot write the local store '
              f'{self.file.path} ({what}): keeping the rows in memory and '
              f'trying again; the live push and the perflog still get them',
              file=sys.stderr, flush=True)


@register_log_handler(STORE_HANDLER)
def _create_store_handler(site_config, config_prefix):
    return StoreHandler(SESSION_ID, store.home() / 'perflogs')
