"""Translated SQL kept by query text in the query engine's cache folder
(index.folder: $CLUSTERPROOF_HOME/cache/query, beside the index):
translating a shipped query costs about a second, every time, and the text
rarely changes. An entry is keyed by the KQL text, the columns of the tables
it reads (duckdb-kql consults them for joins) and duckdb-kql's version; the
clock a query reads (ago(), now()) is a parameter of the SQL, bound at each
run. A cache that cannot be read or written is simply not used.

The shipped queries are translated once more at set-up
(translate_shipped.py), as pip compiles what it installs, into SHIPPED of
the environment that runs them (its duckdb-kql made them): a lookup that
finds nothing under $CLUSTERPROOF_HOME reads there, so that the first
command on a new store does not translate."""
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

from scripts.query import index

SHIPPED = Path(sys.prefix) / 'share' / 'clusterproof' / 'kql'
shipped: Path | None = SHIPPED     # where lookup() reads after the home's


def directory(results_dir: Path) -> Path:
    """Where the translations of queries on *results_dir* are kept."""
    return index.folder(results_dir)


@functools.cache
def _translator() -> str:
    """duckdb-kql's version, from its installed metadata (importing it to
    ask costs its parser)."""
    return importlib.metadata.version('duckdb-kql')


def _path(where: Path, kql: str, columns) -> Path:
    key = json.dumps([_translator(), kql, columns], sort_keys=True)
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
