"""What either engine answers: named, typed columns and rows of plain
Python values (datetimes aware, in UTC; dynamic values decoded)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterator


class QueryFailed(Exception):
    """An engine could not run a query; the message says why."""


@dataclasses.dataclass
class Result:
    columns: list[str]
    types: list[str]          # Kusto type names: string, real, datetime...
    rows: list[list]

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, row)) for row in self.rows]

    def stream(self) -> 'Stream':
        return Stream(self.columns, self.types, iter([self.rows]))


@dataclasses.dataclass
class Stream:
    """A result read a chunk of rows at a time, once (node_outliers --all's
    million rows never held); an engine error reading them: QueryFailed."""
    columns: list[str]
    types: list[str]
    chunks: Iterator[list[list]]

    def result(self) -> Result:
        return Result(self.columns, self.types,
                      [row for chunk in self.chunks for row in chunk])


def plain(value, kusto_type: str):
    """One cell as a plain value: dynamic decoded from JSON text, naive
    datetimes taken as UTC."""
    if value is None:
        return None
    if kusto_type == 'dynamic' and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if kusto_type == 'datetime' and isinstance(value, str):
        value = dt.datetime.fromisoformat(value.replace('Z', '+00:00'))
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.timezone.utc)
        return value.astimezone(dt.timezone.utc)
    if isinstance(value, tuple):
        return list(value)
    return value
