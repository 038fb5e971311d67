"""`clusterproof sync --verify`: ask Log Analytics which acknowledged rows
it really holds. An accepted (204) batch can still be lost at ingestion;
the rows a ledger calls shipped but the workspace lacks are shipped again.
This is the one path that may knowingly send a row twice (queries
deduplicate on record_id).

Only rows acknowledged long enough ago to be queryable (ingestion takes
minutes) and within the last N days are asked about.
"""
from __future__ import annotations

import datetime as dt
import time

from .. import locks
from . import ingestion, sync as backlog, ledger, shipping
from ..store import files as store

TABLE = 'ReFrameResults_CL'
IDS_PER_QUERY = 500
# TimeGenerated of a row is its store time, or the receive time when that
# was over 2 days old: look that much further back than the ack window.
TIME_MARGIN = dt.timedelta(days=3)


class NoReadAccess(Exception):
    pass


def acknowledged(min_age: float, days: float) -> backlog.Backlog:
    """Stored rows of finished sessions acknowledged between `days` days
    and `min_age` seconds ago, with the ledger of each."""
    now = time.time()
    found = backlog.Backlog()
    for path in store.session_files():
        if locks.is_locked(ledger.session_lock_path(path)):
            continue
        acked = ledger.read_ledger(ledger.ledger_path(path))
        window = {rid for rid, when in acked.items()
                  if now - days * 86400 <= when <= now - min_age}
        if not window:
            continue
        session_ledger = ledger.Ledger(ledger.ledger_path(path))
        for row in store.read_session_file(path):
            record_id = row.get('record_id')
            if record_id in window and record_id not in found.ledger_of:
                found.rows.append(shipping.with_completion_time(row))
                found.ledger_of[record_id] = session_ledger
    return found


def _quoted(record_ids: list[str]) -> str:
    return ', '.join(f"'{rid}'" for rid in record_ids
                     if all(c.isalnum() or c == '-' for c in rid))


def columns_query_for(record_ids: list[str], columns: list[str]) -> str:
    """The given columns of the rows, as the workspace holds them."""
    return (f'{TABLE} | where record_id in ({_quoted(record_ids)}) '
            f'| project record_id, {", ".join(columns)}')


def _empty(value) -> bool:
    return value is None or value == '' or value == [] or value == {}


def empty_columns(stored: list[dict], held: list[dict]) -> dict[str, int]:
    """Column -> how many rows the workspace holds without a value the
    stored row has: a column the deployed DCR does not declare is dropped
    silently (the Logs Ingestion API still answers 204)."""
    by_id = {row.get('record_id'): row for row in held}
    counts: dict[str, int] = {}
    for row in stored:
        there = by_id.get(row.get('record_id'))
        if there is None:
            continue
        for column, value in row.items():
            if column in there and not _empty(value) and \
                    _empty(there[column]):
                counts[column] = counts.get(column, 0) + 1
    return dict(sorted(counts.items()))


def query_for(record_ids: list[str]) -> str:
    quoted = ', '.join(f"'{rid}'" for rid in record_ids
                       if all(c.isalnum() or c == '-' for c in rid))
    return (f'{TABLE} | where record_id in ({quoted}) '
            f'| distinct record_id')


class Workspace:
    """The workspace through azure-monitor-query's LogsQueryClient."""

    def __init__(self, settings: dict, credential):
        from azure.monitor.query import LogsQueryClient
        self.workspace_id = settings['workspace_id']
        self.client = LogsQueryClient(credential,
                                      endpoint=settings['endpoint'])

    def _query(self, query: str, span: dt.timedelta):
        from azure.core.exceptions import HttpResponseError
        try:
            result = self.client.query_workspace(self.workspace_id, query,
                                                 timespan=span)
        except HttpResponseError as err:
            if err.status_code in (401, 403):
                code = getattr(getattr(err, 'error', None), 'code', None)
                raise NoReadAccess(f'{err.status_code} {code or ""}'.strip()
                                   ) from None
            raise
        return getattr(result, 'tables', None) or \
            getattr(result, 'partial_data', None) or []

    def can_read(self) -> None:
        """Raises NoReadAccess unless the identity may query the table."""
        self._query(f'{TABLE} | take 0', dt.timedelta(hours=1))

    def columns_of(self, rows: list[dict], days: float) -> list[dict]:
        """The workspace's copy of ``rows``: the columns the stored rows
        fill, by record_id (raises NoReadAccess)."""
        columns = sorted({name for row in rows for name, value in row.items()
                          if name != 'record_id' and not _empty(value)})
        found = []
        span = dt.timedelta(days=days) + TIME_MARGIN
        for start in range(0, len(rows), IDS_PER_QUERY):
            part = [row['record_id'] for row in rows[start:start + IDS_PER_QUERY]]
            for table in self._query(columns_query_for(part, columns), span):
                names = list(table.columns)
                found += [dict(zip(names, values)) for values in table.rows]
        return found

    def held(self, record_ids: list[str], days: float) -> set[str]:
        """The record_ids the workspace holds (raises NoReadAccess)."""
        held = set()
        span = dt.timedelta(days=days) + TIME_MARGIN
        for start in range(0, len(record_ids), IDS_PER_QUERY):
            part = record_ids[start:start + IDS_PER_QUERY]
            for table in self._query(query_for(part), span):
                if not table.rows:
                    continue
                column = list(table.columns).index('record_id')
                held.update(row[column] for row in table.rows)
        return held


def default_workspace() -> Workspace:
    return Workspace(ingestion.workspace_settings(),
                     ingestion.credential())
