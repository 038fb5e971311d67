"""The exact form the store's writer gives a row of the current schema, so
that `clusterproof sync` can ship such a line without decoding it.

store.encode_rows writes ``json.dumps(row_schema.make_row(...),
separators=(',', ':'), allow_nan=False)``: every schema column, in schema
order, ASCII only, no spaces. One regular expression, built from the schema,
matches a line only when it is that form with every value of its column's
type: a JSON string or null for string and datetime columns, an integer or
null for int ones, a number or null for real ones, and any JSON value
nested no deeper than _DEPTH says for dynamic ones. Numbers are held to
what json reads as finite (at most 17 digits before the point, a two-digit
exponent), so a NaN, an infinity, 1e999 or a number too long to read never
matches.

A line that matches is a valid JSON object the store's reader
(store.parse_line) would read unchanged: it is sent as it is. Any other line
(torn, foreign, an older schema, keys in another order, escapes the writer
does not make, a NaN) goes to the reader, which reads it, nulls and warns
as it always has.
"""
from __future__ import annotations

import functools
import json
import re

_CHARS = rb'[\x20\x21\x23-\x5b\x5d-\x7e]*'
STRING = rb'"' + _CHARS + rb'(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})' + \
    _CHARS + rb')*"'
INTEGER = rb'-?(?:0|[1-9][0-9]{0,16})'
NUMBER = INTEGER + rb'(?:\.[0-9]{1,25})?(?:[eE][-+]?[0-9]{1,2})?'
SCALAR = rb'(?:' + STRING + rb'|' + NUMBER + rb'|true|false|null)'


def _nested(depth: int) -> bytes:
    """A JSON value whose arrays and objects nest at most *depth* deep."""
    if depth == 0:
        return SCALAR
    inner = _nested(depth - 1)
    array = rb'\[(?:' + inner + rb'(?:,' + inner + rb')*)?\]'
    member = STRING + rb':' + inner
    obj = rb'\{(?:' + member + rb'(?:,' + member + rb')*)?\}'
    return rb'(?:' + SCALAR + rb'|' + array + rb'|' + obj + rb')'


_VALUES = {'string': STRING, 'datetime': STRING, 'int': INTEGER,
           'long': INTEGER, 'real': NUMBER}
# How deep a dynamic column's value may nest and still be matched: the
# test's parameters hold reference_differences (metric -> reasons) and the
# health checks' own parameters; the node list and the tags are flat lists.
# A deeper value is left to the reader (each level quadruples the pattern,
# and its compiling is paid by every sync).
_DEPTH = {'check_params': 3}
# groups the shipper reads without decoding the line
_CAPTURED = {'record_id': b'id', 'check_job_completion_time': b'done'}


@functools.cache
def _form() -> re.Pattern:
    from ..rows import schema as row_schema
    parts = []
    for name, kind in row_schema.column_types().items():
        value = rb'(?:null|' + (_VALUES.get(kind) or _nested(
            _DEPTH.get(name, 1))) + rb')'
        group = _CAPTURED.get(name)
        if group:
            value = rb'(?P<' + group + rb'>' + value + rb')'
        parts.append(json.dumps(name).encode() + rb':' + value)
    return re.compile(rb'\{' + rb','.join(parts) + rb'\}\n')


def shippable(raw: bytes) -> str | None:
    """The record_id of *raw* (a stored line with its newline) when it is a
    row in the writer's form with a record_id and a completion time, so that
    it can be sent as it is; None when the store's reader must read it."""
    found = _form().fullmatch(raw)
    if found is None:
        return None
    record_id, done = found.group('id'), found.group('done')
    if record_id == b'null' or done == b'null' or done == b'""':
        return None
    if b'\\' in record_id:
        return json.loads(record_id)
    return record_id[1:-1].decode('ascii')
