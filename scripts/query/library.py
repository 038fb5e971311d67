"""The shipped KQL queries, read from bicep/queries/ like Bicep reads them.

Every query reads ``clusterproof_results`` (results.kql: each record once,
by record_id), sent as one text: the base as a ``let`` of that name, then
the query, as Bicep composes the saved functions, tiles and alert.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from pathlib import Path

QUERY_DIR = Path(__file__).resolve().parents[2] / 'bicep' / 'queries'
BASE_NAME = 'results'
FUNCTION_PREFIX = 'clusterproof_'     # saved functions: clusterproof_<name>
BASE_FUNCTION = FUNCTION_PREFIX + BASE_NAME
_HEADER = re.compile(r'^// name: (\w+) - (.+)$')


class QueryError(Exception):
    """A query that cannot be found, read or run; the message says why."""


@dataclasses.dataclass(frozen=True)
class Query:
    name: str
    description: str
    text: str
    standalone: bool = False   # sent as it is, without the base's let


def saved_function_call(name: str) -> Query:
    """A call of the deployed function clusterproof_<name> (Log Analytics
    only: it carries the base itself)."""
    return Query(name, '', f'{FUNCTION_PREFIX}{name}\n', standalone=True)


def _read(path: Path) -> Query:
    try:
        text = path.read_text()
    except OSError as err:
        raise QueryError(f'cannot read {path}: {err.strerror}') from None
    header = _HEADER.match(text.splitlines()[0] if text else '')
    name, description = header.groups() if header else (path.stem, '')
    return Query(name, description, text)


@functools.cache
def shipped() -> dict[str, Query]:
    """The shipped queries by name, the base included (read once)."""
    return {path.stem: _read(path) for path in sorted(QUERY_DIR.glob('*.kql'))}


def resolve(name_or_file: str | Query) -> Query:
    """A shipped query by name, or a user's .kql file (a Query as it is)."""
    if isinstance(name_or_file, Query):
        return name_or_file
    queries = shipped()
    if name_or_file in queries:
        return queries[name_or_file]
    path = Path(name_or_file)
    if path.suffix == '.kql' or path.exists():
        return _read(path)
    raise QueryError(f'no shipped query {name_or_file!r} and no such file; '
                     f'shipped: {", ".join(sorted(queries))}')


@dataclasses.dataclass(frozen=True)
class Filters:
    """Narrow every query to some rows: applied to the base, so they hold
    for whatever a query does next."""
    since: dt.datetime | None = None
    cluster: str | None = None
    partition: str | None = None

    def kql(self) -> str:
        lines = []
        if self.since:
            lines.append('| where completed >= datetime('
                         f'{self.since.astimezone(dt.timezone.utc):%FT%TZ})')
        if self.cluster:
            lines.append(f'| where cluster == {string_literal(self.cluster)}')
        if self.partition:
            lines.append('| where check_partition == '
                         f'{string_literal(self.partition)}')
        return ''.join(line + '\n' for line in lines)


def string_literal(value: str) -> str:
    """A KQL string literal that means exactly *value*."""
    escaped = value.replace('\\', '\\\\').replace("'", "\\'")
    escaped = escaped.replace('\n', '\\n').replace('\r', '\\r')
    return f"'{escaped}'"


def base_text(filters: Filters | None = None) -> str:
    return shipped()[BASE_NAME].text + (filters.kql() if filters else '')


# The base's deduplication: the local engine does it once, at load.
DEDUPE = '| summarize arg_max(TimeGenerated, *) by record_id\n'


def base_after_dedupe(filters: Filters | None = None) -> str:
    """The base over a table that holds each record once already: its text
    without the deduplication step, read from ReFrameResults_CL."""
    text = base_text(filters)
    if DEDUPE not in text:
        raise QueryError(f'{BASE_NAME}.kql no longer deduplicates with '
                         f'{DEDUPE.strip()!r}: the local engine must follow')
    return text.replace(DEDUPE, '', 1)


def with_settings(text: str, **values: str) -> str:
    """*text* with the settings named given these values (KQL literals);
    each setting must be there, once."""
    for name, value in values.items():
        text, count = re.subn(rf'^let {name} = [^;\n]*;$',
                              f'let {name} = {value};', text, flags=re.M)
        if count != 1:
            raise QueryError(f'the query has no one setting `let {name}`')
    return text


def narrowed(query: Query, step: str) -> Query:
    """*query* with one more step on its result (``| where ...``): the same
    text in Log Analytics and locally."""
    return dataclasses.replace(query, text=query.text.rstrip('\n') + '\n'
                               + step + '\n')


def outliers_only() -> Query:
    """node_outliers keeping the outlying nodes only: its only_outliers
    setting on (the groups without a suspect get no deviations), then the
    outliers kept."""
    query = shipped()['node_outliers']
    return narrowed(dataclasses.replace(query, text=with_settings(
        query.text, only_outliers='true')), '| where outlier')


def is_base(query: Query) -> bool:
    """Whether *query* is the shipped base itself."""
    return query.name == BASE_NAME and not query.standalone and \
        query.text == shipped()[BASE_NAME].text


def compose(query: Query, filters: Filters | None = None) -> str:
    """The text to run: the base as a let, then the query. The base itself
    is run as it is (with the filters)."""
    if is_base(query):
        return base_text(filters)
    if query.standalone:
        return query.text
    return f'let {BASE_FUNCTION} = {base_text(filters)};\n{query.text}'
