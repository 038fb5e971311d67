"""Who holds each row of a ReFrame session while the store cannot write.

The store handler (config/results/handlers/store_handler.py) keeps the rows it could not
write here and tries them again at every record and at session end. The
live push (config/results/azure/live_push.py) ships such a row even when the
ledger cannot be written, since Log Analytics then holds its only copy (no
`sync` can send it again: it is in no store file), and says so here; a row
the store writes later, after the live push shipped it, goes into the
ledger with it. At session end the store handler names what is still
unwritten: only in Log Analytics, only in the perflog, or nowhere.

ReFrame closes its perflog handlers in the order they were configured (the
store first), so the store's end line waits for every handler that
registered here to have closed.
"""
from __future__ import annotations

import threading

_SESSIONS: dict[str, 'Unstored'] = {}
_LOCK = threading.Lock()


class Unstored:
    def __init__(self):
        self.lock = threading.RLock()
        self.rows: dict[str, dict] = {}   # record_id -> row not written
        self.in_azure_only: set[str] = set()
        self._open: set[str] = set()           # handlers not closed yet
        self._at_end = []

    def keep(self, rows) -> None:
        with self.lock:
            for row in rows:
                self.rows[str(row['record_id'])] = row

    def is_unstored(self, record_id) -> bool:
        with self.lock:
            return str(record_id) in self.rows

    def stored(self, record_ids) -> list[str]:
        """Rows now written; returns those Log Analytics already holds
        (their ids belong in the ledger)."""
        with self.lock:
            ids = [str(rid) for rid in record_ids]
            for rid in ids:
                self.rows.pop(rid, None)
            shipped = [rid for rid in ids if rid in self.in_azure_only]
            self.in_azure_only.difference_update(shipped)
            return shipped

    def shipped(self, record_ids) -> list[str]:
        """Log Analytics accepted these rows; returns those the store holds
        (the caller writes them into the ledger)."""
        with self.lock:
            in_store = []
            for rid in map(str, record_ids):
                if rid in self.rows:
                    self.in_azure_only.add(rid)
                else:
                    in_store.append(rid)
            return in_store

    # The end of the session: the last handler to close runs the line.
    def opened(self, name: str) -> None:
        with self.lock:
            self._open.add(name)

    def at_end(self, callback) -> None:
        with self.lock:
            self._at_end.append(callback)

    def closed(self, name: str) -> None:
        with self.lock:
            self._open.discard(name)
            if self._open:
                return
            callbacks, self._at_end = self._at_end, []
        for callback in callbacks:
            callback()


def of(session_id: str) -> Unstored:
    with _LOCK:
        return _SESSIONS.setdefault(session_id, Unstored())
