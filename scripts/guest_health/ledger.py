"""What was reported to Azure, kept in the home: one JSON line per event of
a report (sending, its answer, a follow-up, closing), appended and never
rewritten. A report's state is its last event; it is open from the moment
Azure has it until a passing node on another physical host closes it."""
from __future__ import annotations

import json
import os
from pathlib import Path

from config.results.rows import schema as row_schema
from config.results.store import files as store

SENDING, CLOSED, FOLLOWED = 'sending', 'closed', 'followed'
OPEN_STATES = ('filed', 'already_filed', FOLLOWED)


class LedgerError(OSError):
    """The ledger cannot be read: nothing is reported then."""


def path() -> Path:
    return store.home() / 'azure_reports' / 'ledger.jsonl'


def append(event: dict) -> dict:
    """Write one event (with its time); a line is one write() of O_APPEND,
    so two runs never interleave their lines."""
    entry = {'at': row_schema.now_iso(), **event}
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry, sort_keys=True, default=str) + '\n').encode()
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return entry


def events() -> list[dict]:
    """Every event, oldest first (a torn last line is left out)."""
    try:
        text = path().read_text()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise LedgerError(f'the ledger {path()} cannot be read ({error}): '
                          'what was reported is not known') from None
    found = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get('name'):
            found.append(entry)
    return found


def reports() -> dict[str, dict]:
    """{name: the report as its events made it: the first event's facts
    with each later event's state and answer over them}."""
    merged: dict[str, dict] = {}
    for entry in events():
        merged.setdefault(entry['name'], {}).update(entry)
    return merged


def open_reports() -> dict[str, dict]:
    return {name: report for name, report in reports().items()
            if report.get('state') in OPEN_STATES}


def open_for(node: str, category: str) -> dict | None:
    """The open report of this node and category, if there is one."""
    return next((r for r in open_reports().values()
                 if r.get('node') == node and r.get('category') == category),
                None)
