"""The row schema: the columns of bicep/results_schema.json (the single
source of truth shared with the Log Analytics table and the DCR stream
declaration), and a complete, JSON-safe, typed row of them.

Every value is made JSON-safe, and every row has every column (None where
unknown).
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import math
from pathlib import Path

SCHEMA_FILE = Path(__file__).resolve().parents[3] / 'bicep' / \
    'results_schema.json'
DATA_VERSION = '2.3'
# The facility of the rows of the health samples around a test
HEALTH_FACILITY = 'clusterproof-health'


@functools.lru_cache(maxsize=None)
def schema() -> dict:
    with open(SCHEMA_FILE) as fp:
        return json.load(fp)


def column_names() -> list[str]:
    return [column['name'] for column in schema()['columns']]


def column_types() -> dict[str, str]:
    return {column['name']: column['type'] for column in schema()['columns']}


def json_safe(value):
    """Plain JSON types only: NaN/inf become None, sets become lists,
    datetimes become ISO 8601 strings, anything else its str()."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(
            value, (set, frozenset)) else value
        return [json_safe(v) for v in items]
    return str(value)


def _coerce(value, kind: str):
    value = json_safe(value)
    if value is None:
        return None
    try:
        if kind == 'real':
            return float(value)
        if kind in ('int', 'long'):
            return int(value)
    except (TypeError, ValueError):
        return None
    if kind == 'string' and not isinstance(value, str):
        return json.dumps(value)
    return value


def make_row(values: dict) -> dict:
    """A complete row: every schema column, typed, nothing else."""
    types = column_types()
    return {name: _coerce(values.get(name), kind)
            for name, kind in types.items()}


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()
