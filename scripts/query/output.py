"""A query result for people (an aligned table, values with their units)
and for scripts (JSON, CSV)."""
from __future__ import annotations

import csv
import datetime as dt
import io
import json

from scripts.query.result import Result

UNIT_COLUMN = 'check_perf_unit'
# Columns that hold a measurement in the row's unit.
_MEASURED = ('value', 'median', 'min_value', 'max_value', 'reference', '_bound',
             'peak', 'check_perf_ref', 'check_perf_peak')


def _is_measured(column: str) -> bool:
    if 'of_' in column:            # a ratio: of_reference, pct_of_peak
        return False
    return column.endswith(_MEASURED) or column.startswith('peer_median')


def _is_percent(column: str) -> bool:
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
        if _is_percent(column):
            return f'{text}%'
        if unit and _is_measured(column):
            return f'{text} {unit}'
        return text
    return str(value)


_NAMED = {'\n': '\\n', '\r': '\\r', '\t': '\\t'}
# C0 controls, DEL and C1 controls (ESC, CSI, OSC...): never raw on a terminal.
_ESCAPES = {code: _NAMED.get(chr(code), f'\\x{code:02x}')
            for code in [*range(0x20), *range(0x7f, 0xa0)]}


def printable(text: str) -> str:
    """text with every control character written as an escape (\\x1b,
    \\r, \\n): a stored value can neither drive the terminal nor forge
    table lines."""
    return text.translate(_ESCAPES)


def table(result: Result) -> str:
    """Aligned columns; measurements carry the row's unit, so the unit
    column itself is left out, and so are columns empty in every row."""
    if not result.rows:
        return '(no rows)\n'
    records = result.records()
    show = [c for c in result.columns if c != UNIT_COLUMN and
            any(r[c] not in (None, '', []) for r in records)]
    cells = []
    for record in records:
        unit = record.get(UNIT_COLUMN)
        cells.append([printable(human(record[c], c, unit)) for c in show])
    numeric = [all(_looks_numeric(row[i]) for row in cells)
               for i in range(len(show))]
    widths = [max(len(show[i]), *(len(row[i]) for row in cells))
              for i in range(len(show))]

    def line(values):
        return '  '.join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()
    out = [line([printable(c) for c in show]),
           line(['-' * w for w in widths])]
    out += [line(row) for row in cells]
    return '\n'.join(out) + '\n'


def _looks_numeric(text: str) -> bool:
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
    rows = [{k: _jsonable(v) for k, v in record.items()}
            for record in result.records()]
    return json.dumps(rows, indent=1) + '\n'


def as_csv(result: Result) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator='\n')
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow(['' if v is None else
                         json.dumps(v) if isinstance(v, (list, dict)) else
                         _jsonable(v) for v in row])
    return buffer.getvalue()
