"""What a query reads of the store, from its KQL text: the columns it names
and the window it states, so that the local engine loads no more than that.

A shipped query names every column it uses and shapes its own output, so a
column it never names cannot change its rows. Its window is the earliest
row it can read: every read of clusterproof_results in it must go straight
into ``| where completed > ago(SPAN)`` (SPAN a timespan, a sum of them, or
a let of one); if one does not, the query reads the whole history. A user's
own file reads every column and the whole history (its output may be every
column); --since narrows every query.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re

from config.results.rows import schema as row_schema
from scripts.query import library

_READ = re.compile(rf'\b{library.BASE_FUNCTION}\b')
# what follows a read: blank space and // comments, then the window filter
_WINDOW = re.compile(r'(?:\s|//[^\n]*\n)*\|\s*where\s+completed\s*>=?\s*'
                     r'ago\(([^()]*)\)')
_SPAN = re.compile(r'^(\d+(?:\.\d+)?)(d|h|m|s)$')
_UNITS = {'d': 'days', 'h': 'hours', 'm': 'minutes', 's': 'seconds'}


@dataclasses.dataclass(frozen=True)
class Reading:
    """What a connection reads: these columns (None: all of them), from the
    session files that can hold rows completed at or after *start* (None:
    every file)."""
    columns: frozenset[str] | None = None
    start: dt.datetime | None = None

    def covers(self, other: 'Reading') -> bool:
        wider = self.columns is None or (
            other.columns is not None and other.columns <= self.columns)
        earlier = self.start is None or (
            other.start is not None and self.start <= other.start)
        return wider and earlier

    def union(self, other: 'Reading') -> 'Reading':
        columns = (None if self.columns is None or other.columns is None
                   else self.columns | other.columns)
        start = (None if self.start is None or other.start is None
                 else min(self.start, other.start))
        return Reading(columns, start)


def reading(query: library.Query, filters: library.Filters | None,
            now: dt.datetime) -> Reading:
    """What *query* (with *filters*) needs of the store at *now*."""
    since = filters.since if filters else None
    if not library.is_shipped(query) or query.name == library.BASE_NAME:
        return Reading(None, since)
    columns = named_columns(library.base_text(filters) + query.text)
    span = window(query.text)
    start = now - span if span is not None else None
    if since is not None:
        start = since if start is None else max(start, since)
    return Reading(columns, start)


def named_columns(text: str) -> frozenset[str]:
    """The schema's columns that *text* names."""
    return frozenset(name for name in row_schema.column_names()
                     if re.search(rf'\b{name}\b', text))


def window(text: str) -> dt.timedelta | None:
    """The longest span any read of clusterproof_results in *text* looks
    back, or None when some read is not filtered so."""
    lets = dict(re.findall(r'\blet\s+(\w+)\s*=\s*([^;]+);', text))
    longest = None
    for found in _READ.finditer(text):
        stated = _WINDOW.match(text, found.end())
        span = _span(stated.group(1), lets) if stated else None
        if span is None:
            return None
        longest = span if longest is None else max(longest, span)
    return longest


def _span(expression: str, lets: dict) -> dt.timedelta | None:
    """A sum of timespan literals and lets of them, or None."""
    total = dt.timedelta()
    for term in expression.split('+'):
        term = term.strip()
        term = lets.get(term, term).strip()
        literal = _SPAN.match(term)
        if not literal:
            return None
        total += dt.timedelta(**{_UNITS[literal.group(2)]:
                                 float(literal.group(1))})
    return total
