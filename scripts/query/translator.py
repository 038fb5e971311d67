"""KQL translated to DuckDB SQL on a connection of its own, which holds only
the store's shape: an empty ReFrameResults_CL with the schema's columns,
and clusterproof_results, the base's view over it (with the filters).

Translating a shipped query costs about a second, every time, and the text
rarely changes, so the SQL is kept in the query engine's cache folder
(index.folder), a .json file per entry, keyed by the KQL text, the columns
of these two objects (duckdb-kql consults them for joins) and duckdb-kql's
version; the clock a query reads (ago(), now()) is a parameter of the SQL,
bound at each run. A cache that cannot be read or written is not used.
Set-up translates the shipped queries once more (translate_shipped.py), as
pip compiles what it installs, into SHIPPED of the environment that runs
them: a lookup that finds nothing in the cache folder reads there, so the
first command on a new store does not translate.
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
from pathlib import Path

import duckdb

from scripts.query import json_lines, library

SHIPPED = Path(sys.prefix) / 'share' / 'clusterproof' / 'kql'
shipped: Path | None = SHIPPED     # where lookup() reads after the cache
# The tables and views a translation depends on (what duckdb-kql's schema()
# reads), as the cache's key.
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
    """duckdb-kql's version, from its installed metadata (importing it to
    ask costs its parser)."""
    return importlib.metadata.version('duckdb-kql')


def _path(where: Path, kql: str, columns) -> Path:
    key = json.dumps([_translator_version(), kql, columns], sort_keys=True)
    return where / f'{hashlib.sha256(key.encode()).hexdigest()}.json'


def clock_parameters(clock: str | None, moment: dt.datetime) -> dict:
    """The SQL's parameters: the clock, pinned at *moment*, if it reads it,
    in the form duckdb-kql binds it (duckdb_kql.params.as_datetime: a
    datetime in UTC without its zone; store_translation keeps a
    translation only when its clock is bound this way)."""
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
    *moment* (a query's own declared parameters, or a clock it sets itself,
    are not cached)."""
    from duckdb_kql.translate import CLOCK_SLOT    # imported to translate
    parameters = dict(translated.parameters)
    if parameters and parameters != clock_parameters(CLOCK_SLOT, moment):
        return
    entry = {'sql': str(translated),
             'clock': CLOCK_SLOT if parameters else None}
    path = _path(where, kql, columns)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile('w', dir=path.parent, delete=False,
                                         suffix='.partial') as fp:
            json.dump(entry, fp)
        os.replace(fp.name, path)
    except OSError:
        try:
            os.unlink(fp.name)
        except (OSError, NameError):
            pass
