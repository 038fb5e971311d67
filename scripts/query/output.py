"""A query result for people (an aligned table, values with their units)
and for scripts (JSON, CSV)."""
from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
import json

from scripts.query.result import Result, Stream

UNIT_COLUMN = 'check_perf_unit'
# Columns that hold a measurement in the row's unit.
_MEASURED = ('value', 'median', 'min_value', 'max_value', 'reference',
             '_bound', 'peak', 'check_perf_ref', 'check_perf_peak')


def is_measured(column: str) -> bool:
    if 'of_' in column:            # a ratio: of_reference, pct_of_peak
        return False
    return column.endswith(_MEASURED) or column.startswith('peer_median')


def is_percent(column: str) -> bool:
    return column.startswith('pct_') or column.endswith('_pct') or \
        '_pct_' in column


def _number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return f'{int(value):,}' if abs(value) >= 10000 else str(int(value))
    if abs(value) >= 1000:
        return f'{value:,.1f}'
    return f'{value:.4g}'


def human(value, column: str = '', unit: str | None = None) -> str:
    """One cell as a person reads it."""
    if value is None or value == '':
        return ''
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, dt.datetime):
        if (value.hour, value.minute, value.second) == (0, 0, 0):
            return f'{value:%Y-%m-%d}'
        return f'{value:%Y-%m-%d %H:%M}'
    if isinstance(value, (list, dict)):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return ','.join(value)
        return json.dumps(value)
    if isinstance(value, (int, float)):
        text = _number(value)
        if is_percent(column):
            return f'{text}%'
        if unit and is_measured(column):
            return f'{text} {unit}'
        return text
    return str(value)


NAMED_ESCAPES = {'\n': '\\n', '\r': '\\r', '\t': '\\t'}
# C0 controls, DEL and C1 controls (ESC, CSI, OSC...): never raw on a terminal.
_ESCAPES = {code: NAMED_ESCAPES.get(chr(code), f'\\x{code:02x}')
            for code in [*range(0x20), *range(0x7f, 0xa0)]}


def printable(text: str) -> str:
    """text with every control character written as an escape (\\x1b,
    \\r, \\n): a stored value can neither drive the terminal nor forge
    table lines."""
    # every character translate() would write again is unprintable, so a
    # printable text (nearly every cell) is its own answer, found in C
    return text if text.isprintable() else text.translate(_ESCAPES)


def table(result: Result) -> str:
    """Aligned columns; measurements carry the row's unit, so the unit
    column itself is left out, and so are columns empty in every row."""
    return _written(write_table, result)


def _written(writer, result: Result) -> str:
    buffer = io.StringIO()
    writer(result.stream(), buffer)
    return buffer.getvalue()


# The most rows a table shows; CSV and JSON write every row.
TABLE_ROWS = 10_000


def write_table(stream: Stream, out) -> int:
    """table() of at most TABLE_ROWS rows of *stream*, then a line saying
    how to get the rest; a column of numbers right-aligned. Returns the
    number of rows shown."""
    shown = [i for i, c in enumerate(stream.columns) if c != UNIT_COLUMN]
    names = [stream.columns[i] for i in shown]
    unit_at = (stream.columns.index(UNIT_COLUMN)
               if UNIT_COLUMN in stream.columns else None)
    rows = itertools.islice((row for chunk in stream.chunks for row in chunk),
                            TABLE_ROWS + 1)
    lines = [[(printable(human(row[i], name, None if unit_at is None
                               else row[unit_at])),
               row[i] not in (None, '', [])) for name, i in zip(names, shown)]
             for row in rows]
    more = len(lines) > TABLE_ROWS
    del lines[TABLE_ROWS:]
    if not lines:
        out.write('(no rows)\n')
        return 0
    keep = [at for at in range(len(shown)) if any(
        line[at][1] for line in lines)]
    widths = [max([len(printable(name))] + [len(line[at][0]) for line in
                                            lines])
              for at, name in enumerate(names)]
    numeric = [all(looks_numeric(line[at][0]) for line in lines)
               for at in range(len(shown))]
    out.write(_aligned([printable(name) for name in names], widths, numeric,
                       keep))
    out.write(_aligned(['-' * width for width in widths], widths, numeric,
                       keep))
    for line in lines:
        out.write(_aligned([cell for cell, _ in line], widths, numeric, keep))
    if more:
        out.write(f'(the first {TABLE_ROWS:,} rows; --csv or --json writes '
                  'every row)\n')
    return len(lines)


def _aligned(cells, widths, numeric, keep) -> str:
    """The *keep* columns of *cells* padded to *widths*, two spaces apart."""
    return '  '.join(cells[at].rjust(widths[at]) if numeric[at]
                     else cells[at].ljust(widths[at])
                     for at in keep).rstrip() + '\n'


def looks_numeric(text: str) -> bool:
    head = text.split(' ')[0].rstrip('%').replace(',', '')
    try:
        float(head)
    except ValueError:
        return text == ''
    return True


def _jsonable(value):
    if isinstance(value, dt.datetime):
        return value.isoformat().replace('+00:00', 'Z')
    return value


def as_json(result: Result) -> str:
    return _written(write_json, result)


def write_json(stream: Stream, out) -> int:
    """A JSON array of row objects, written a row at a time: the same text
    as json.dumps(rows, indent=1). Returns the number of rows."""
    rows = 0
    for chunk in stream.chunks:
        for row in chunk:
            item = json.dumps({k: _jsonable(v)
                               for k, v in zip(stream.columns, row)},
                              indent=1)
            out.write(('[\n ' if not rows else ',\n ')
                      + item.replace('\n', '\n '))
            rows += 1
    out.write('\n]\n' if rows else '[]\n')
    return rows


def as_csv(result: Result) -> str:
    return _written(write_csv, result)


def write_csv(stream: Stream, out) -> int:
    """CSV with a header, a chunk of rows at a time. Returns the number of
    rows."""
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(stream.columns)
    rows = 0
    for chunk in stream.chunks:
        writer.writerows(['' if v is None else
                          json.dumps(v) if isinstance(v, (list, dict)) else
                          _jsonable(v) for v in row] for row in chunk)
        rows += len(chunk)
    return rows
