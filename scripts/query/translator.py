"""KQL translated to DuckDB SQL on a connection of its own, which holds only
the store's shape: an empty ReFrameResults_CL with the schema's columns,
and clusterproof_results, the base's view over it (with the filters).

A translation (about a second) is kept in the cache folder (index.folder)
as a .json file keyed by the KQL text, those objects' columns and
duckdb-kql's version; the clock (ago(), now()) is a parameter bound at each
run. Set-up translates the shipped queries into SHIPPED
(translate_shipped.py), where a lookup reads after the cache folder.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path

import duckdb

from scripts.query import json_lines, library

SHIPPED = Path(sys.prefix) / 'share' / 'clusterproof' / 'kql'
shipped: Path | None = SHIPPED     # where lookup() reads after the cache
# What duckdb-kql's schema() reads: the cache's key.
_COLUMNS = ('SELECT table_catalog, table_name, column_name, current_database()'
            ' FROM information_schema.columns ORDER BY table_catalog, '
            'table_name, ordinal_position')


class Translator:
    def __init__(self, table: str, columns: list[dict], conditions: str,
                 cache: Path):
        self.cache = cache               # the cache folder
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone='UTC'")
        self.con.execute(f'CREATE TABLE "{table}" '
                         f'({json_lines.definitions(columns)})')
        sql, _ = self.translate(library.base_after_dedupe(), None)
        if conditions:
            sql = f'SELECT * FROM ({sql}) WHERE {conditions}'
        self.base = sql                  # clusterproof_results
        self.con.execute(f'CREATE VIEW "{library.BASE_FUNCTION}" AS {sql}')

    def translate(self, kql: str, now: dt.datetime | None):
        """(SQL, parameters) for *kql*: from the cache when this text was
        translated before for the same columns, else by duckdb-kql, which
        is imported only then (its parser costs ~0.25 s of a command)."""
        columns = [list(row) for row in self.con.sql(_COLUMNS).fetchall()]
        moment = now or dt.datetime.now(dt.timezone.utc)
        cached = lookup(self.cache, kql, columns)
        if cached is not None:
            sql, clock = cached
            return sql, clock_parameters(clock, moment)
        import duckdb_kql
        import duckdb_kql.engine
        translated = duckdb_kql.to_sql(
            kql, schema=duckdb_kql.engine.schema(self.con), query_now=moment)
        if translated.unbound:
            raise duckdb_kql.KqlSchemaError(', '.join(translated.unbound))
        store_translation(self.cache, kql, columns, translated, moment)
        return str(translated), dict(translated.parameters)


@functools.cache
def _translator_version() -> str:
    """duckdb-kql's version, without importing its parser."""
    return importlib.metadata.version('duckdb-kql')


def _path(where: Path, kql: str, columns) -> Path:
    key = json.dumps([_translator_version(), kql, columns], sort_keys=True)
    return where / f'{hashlib.sha256(key.encode()).hexdigest()}.json'


def clock_parameters(clock: str | None, moment: dt.datetime) -> dict:
    """The SQL's parameters: the clock, if it reads it, pinned at *moment*
    as duckdb-kql binds it (duckdb_kql.params.as_datetime: UTC, no zone)."""
    if not clock:
        return {}
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return {clock: moment}


def lookup(where: Path, kql: str, columns):
    """(SQL, the clock's parameter name or None) from *where*, else from
    the shipped translations, or None when neither holds it."""
    for place in (where, shipped) if shipped else (where,):
        try:
            entry = json.loads(_path(place, kql, columns).read_text())
            return entry['sql'], entry['clock']
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def store_translation(where: Path, kql: str, columns, translated,
                      moment) -> None:
    """Keeps *translated* when its only parameter is the clock pinned at
    *moment* (not a query's own parameters, nor a clock it sets)."""
    from duckdb_kql.translate import CLOCK_SLOT    # imported to translate
    parameters = dict(translated.parameters)
    if parameters and parameters != clock_parameters(CLOCK_SLOT, moment):
        return
    entry = {'sql': str(translated),
             'clock': CLOCK_SLOT if parameters else None}
    path = _path(where, kql, columns)
    partial = path.with_name(f'{path.name}.{os.getpid()}.partial')
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(entry))
        os.replace(partial, path)           # whole, or not at all
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
