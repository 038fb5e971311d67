"""KQL translated to DuckDB SQL on a connection of its own, which holds only
the store's shape: an empty ReFrameResults_CL with the columns a load reads,
and clusterproof_results, the base's view over it (with the filters).

A translation needs no rows, so it runs in a thread while the load reads
the store: duckdb-kql's import and parse are Python (a second and a half of
a cold node_outliers), DuckDB's reading releases the GIL. The translations
of the queries a connection is opened for are made then. Cached ones
(sql_cache) are keyed by these two objects' columns alone, the same for
every load of the same columns.
"""
from __future__ import annotations

import datetime as dt
import threading

import duckdb

from scripts.query import json_lines, library, sql_cache

# The tables and views a translation depends on (what duckdb-kql's schema()
# reads), as the translation cache's key.
_COLUMNS = ('SELECT table_catalog, table_name, column_name, current_database()'
            ' FROM information_schema.columns ORDER BY table_catalog, '
            'table_name, ordinal_position')


class Translator:
    def __init__(self, table: str, columns: list[dict], conditions: str,
                 cache):
        self.cache = cache               # sql_cache's directory
        self._ahead = {}                 # (kql, now) -> answer or error
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
        """(SQL, parameters) for *kql*: made ahead, from the cache when this
        text was translated before for the same columns, else by duckdb-kql,
        which is imported only then (its parser costs ~0.25 s of every
        command)."""
        made = self._ahead.pop((kql, now), None)
        if isinstance(made, BaseException):
            raise made
        if made is not None:
            return made
        columns = [list(row) for row in self.con.sql(_COLUMNS).fetchall()]
        moment = now or dt.datetime.now(dt.timezone.utc)
        cached = sql_cache.lookup(self.cache, kql, columns)
        if cached is not None:
            sql, clock = cached
            return sql, sql_cache.clock_parameters(clock, moment)
        import duckdb_kql
        import duckdb_kql.engine
        translated = duckdb_kql.to_sql(
            kql, schema=duckdb_kql.engine.schema(self.con), query_now=moment)
        if translated.unbound:
            raise duckdb_kql.KqlSchemaError(', '.join(translated.unbound))
        sql_cache.store_translation(self.cache, kql, columns, translated,
                                    moment)
        return str(translated), dict(translated.parameters)

    def ahead(self, queries: list[str], now: dt.datetime | None) -> None:
        """Translates *queries* now; each answer (or the error it raised)
        is handed out by the first translate() of the same text."""
        for kql in queries:
            try:
                self._ahead[kql, now] = self.translate(kql, now)
            except Exception as err:     # raised where the query runs
                self._ahead[kql, now] = err


class Translating(threading.Thread):
    """A Translator made, and *queries* translated, beside the caller."""

    def __init__(self, *args, queries: list[str], now):
        super().__init__(daemon=True)
        self._args, self._queries, self._now = args, queries, now
        self._made = None

    def run(self):
        try:
            made = Translator(*self._args)
            made.ahead(self._queries, self._now)
            self._made = made
        except BaseException as err:
            self._made = err

    def result(self) -> Translator:
        self.join()
        if isinstance(self._made, BaseException):
            raise self._made
        return self._made
