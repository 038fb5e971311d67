"""KQL translated to DuckDB SQL on a connection of its own, which holds only
the store's shape: an empty ReFrameResults_CL with the schema's columns,
and clusterproof_results, the base's view over it (with the filters).
Translations are cached (sql_cache), keyed by these two objects' columns.
"""
from __future__ import annotations

import datetime as dt

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
