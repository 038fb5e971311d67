"""output.write_table's and write_csv's text, made by DuckDB: for a table
every cell formatted, each column's width counted and each line padded in
SQL; for CSV every field written and quoted there; so that a result of a
million rows (node_outliers --all) never becomes Python values. The text
is output.py's to the byte (tests/query/test_query_sql_output.py holds the two
to each other); a result with a column of a type not written here is left
to Python (write() is None), and so is JSON, and a small result
(PYTHON_ROWS), formatted faster there."""
from __future__ import annotations

import csv
import uuid

from scripts.query import output
from scripts.query.output import (NAMED_ESCAPES, UNIT_COLUMN, is_measured,
                                  is_percent, looks_numeric, printable)

# the types KQL's values take in DuckDB (int, long, a sum of longs, real,
# datetime, bool, string); any other is left to Python
_INTEGERS = ('INTEGER', 'BIGINT', 'HUGEINT')
_REALS = ('DOUBLE',)
_TIMES = ('TIMESTAMP', 'TIMESTAMP WITH TIME ZONE')
# what printable() writes again: C0 controls, DEL and C1 controls
_ESCAPED = r"'[\x00-\x1f\x7f-\x9f]'"
# what str.rstrip() strips that printable() leaves in a cell
# (every whitespace character but the controls; the test checks the list)
_TRAILING = ('\u0020\u00a0\u1680' + ''.join(map(chr, range(0x2000, 0x200b)))
             + '\u2028\u2029\u202f\u205f\u3000')
PRINTABLE_FUNCTION = 'clusterproof_printable'


def _printable_macro() -> str:
    """printable() as a DuckDB macro, run only on a cell holding a
    character it writes again (a rare cell)."""
    named = ' '.join(f"WHEN {ord(char)} THEN '{text}'"
                     for char, text in NAMED_ESCAPES.items())
    escaped = (f"CASE ord(ch) {named} ELSE '\\x' || printf('%02x', ord(ch)) "
               'END')
    return (f'CREATE OR REPLACE TEMP MACRO {PRINTABLE_FUNCTION}(s) AS '
            "array_to_string(list_transform(string_split(s, ''), lambda ch: "
            'CASE WHEN ord(ch) < 32 OR ord(ch) BETWEEN 127 AND 159 '
            f"THEN {escaped} ELSE ch END), '')")


_PRINTABLE_MACRO = _printable_macro()
# Lines fetched at a time.
_FETCH = 10_000
# A result of up to this many rows is formatted in Python (output.py): at
# a few thousand rows DuckDB's fixed cost (binding the formatting, three
# statements more) is Python's whole cost, 25 ms at 650 rows against 10.
PYTHON_ROWS = 2_000


class Cells:
    """A result's cells, in a temporary table, made by Stored.cells();
    write() writes the table, and the temporary table is dropped."""

    def __init__(self, con, table: str, names: list[str], kinds: list[str]):
        self.con, self.table = con, table
        self.names, self.kinds = names, kinds

    def write(self, out) -> int:
        """The table written to *out*; the number of rows."""
        try:
            return self._write(out)
        finally:
            self.con.execute(f'DROP TABLE IF EXISTS {self.table}')

    def _write(self, out) -> int:
        con, table, kinds = self.con, self.table, self.kinds
        header = [printable(name) for name in self.names]
        measures = ['count(*)']
        for place, kind in enumerate(kinds):
            # a column's least and greatest cell: text that is not a
            # number, if any, is nearly always one of them
            ends = ([f'min(c{place})', f'max(c{place})'] if kind == 'string'
                    else ['NULL', 'NULL'])
            measures += [f'max(length(c{place}))', f"bool_or(c{place} <> '')",
                         *ends]
        measured = con.execute(f'SELECT {", ".join(measures)} FROM {table}'
                               ).fetchall()[0]
        rows = measured[0]
        if not rows:
            out.write('(no rows)\n')
            return 0
        widths, keep, numeric = [], [], []
        for place, kind in enumerate(kinds):
            longest, filled, *ends = measured[1 + 4 * place:5 + 4 * place]
            widths.append(max(len(header[place]), longest))
            if filled:
                keep.append(place)
            numeric.append(_numeric(con, table, kind, f'c{place}', filled,
                                    ends))
        output.write_heading(out, self.names, widths, numeric, keep)
        _write_lines(con.execute(f'SELECT {_line(keep, widths, numeric)} '
                                 f'FROM {table}'), out)
        return rows


def _write_lines(cursor, out) -> None:
    """Each row of *cursor*'s one text column, as a line of *out*."""
    while True:
        fetched = cursor.fetchmany(_FETCH)
        if not fetched:
            return
        out.write('\n'.join([text for text, in fetched]))
        out.write('\n')


def _line(keep, widths, numeric) -> str:
    """output.aligned_line() of every row of cells, in SQL."""
    if not keep:
        return "''"
    pieces = []
    for at in keep:
        if numeric[at]:
            pieces.append(f"lpad(c{at}, {widths[at]}, ' ')")
        elif at != keep[-1]:
            pieces.append(f"rpad(c{at}, {widths[at]}, ' ')")
        else:                       # its padding would be stripped
            pieces.append(f'c{at}')
    # concat() of every piece at once: a || b || ... copies the line once
    # per piece (3.9 s against 1.5 s at a million lines of 19 columns)
    joined = "concat(" + ", '  ', ".join(pieces) + ")"
    # rstrip() in SQL: rtrim() of a set costs 1.4 s at those million lines,
    # and only a line whose last cell is empty or ends in a space needs it
    last = f'c{keep[-1]}'
    return (f"CASE WHEN {last} <> '' AND strpos('{_TRAILING}', "
            f'right({last}, 1)) = 0 THEN {joined} '
            f"ELSE rtrim({joined}, '{_TRAILING}') END")


class Stored:
    """*sql*'s rows in a temporary table of *con* (a DuckDB connection
    whose time zone is UTC), dropped by drop(); *rows* counts them."""

    def __init__(self, con, sql: str, parameters):
        self.con = con
        self.table = f'_clusterproof_rows_{uuid.uuid4().hex}'
        con.execute(f'CREATE TEMP TABLE {self.table} AS {sql}',
                    parameters or None)
        self.rows = con.execute(f'SELECT count(*) FROM {self.table}'
                                ).fetchall()[0][0]

    def _described(self) -> tuple[list[str], list[str | None]]:
        """The columns' names and kinds (None: a type left to Python)."""
        described = self.con.execute(f'SELECT * FROM {self.table} LIMIT 0'
                                     ).description
        return ([column[0] for column in described],
                [_kind(str(column[1]).upper()) for column in described])

    def _by_place(self, names) -> str:
        """The table with its columns named by place: v0, v1..."""
        values = ', '.join(f'v{at}' for at in range(len(names)))
        return f'{self.table} AS q({values})'

    def cells(self) -> Cells | None:
        """The rows' cells; None when a column's type is one only Python
        formats (a dynamic column: lists, objects)."""
        names, kinds = self._described()
        if None in kinds:
            return None
        shown = [at for at, name in enumerate(names) if name != UNIT_COLUMN]
        # the unit made printable once (u) for every measured column
        with_unit = UNIT_COLUMN in names
        unit = (_printable(f'v{names.index(UNIT_COLUMN)}') if with_unit
                else 'NULL')
        cells = ', '.join(
            f'{_cell(f"v{at}", kinds[at], names[at], with_unit)} '
            f'AS c{place}' for place, at in enumerate(shown)) or '1 AS c'
        table = f'_clusterproof_cells_{uuid.uuid4().hex}'
        self.con.execute(_PRINTABLE_MACRO)
        self.con.execute(f'CREATE TEMP TABLE {table} AS SELECT {cells} FROM '
                         f'(SELECT *, {unit} AS u FROM '
                         f'{self._by_place(names)})')
        return Cells(self.con, table, [names[at] for at in shown],
                     [kinds[at] for at in shown])

    def write_csv(self, out) -> int | None:
        """output.write_csv() of the rows; None (nothing written) when a
        column's type is one only Python writes."""
        names, kinds = self._described()
        if None in kinds:
            return None
        csv.writer(out, lineterminator='\n').writerow(names)
        fields = [_csv_field(f'v{at}', kind) for at, kind in enumerate(kinds)]
        # csv.writer quotes a row of one empty field, which would read as
        # no field at all
        line = (f"CASE WHEN {fields[0]} = '' THEN '\"\"' ELSE {fields[0]} END"
                if len(fields) == 1 else
                "concat(" + ", ',', ".join(fields) + ")")
        _write_lines(self.con.execute(
            f'SELECT {line} FROM {self._by_place(names)}'), out)
        return self.rows

    def drop(self) -> None:
        self.con.execute(f'DROP TABLE IF EXISTS {self.table}')


def makes(writer) -> bool:
    """Whether DuckDB can make *writer*'s text (a table, CSV; not JSON)."""
    return writer in (output.write_table, output.write_csv)


def write(stored: Stored, writer, out) -> int | None:
    """*writer*'s text (output.write_table or write_csv: makes()) of the
    *stored* rows, made by DuckDB; None (nothing written) when a column's
    type is one only Python writes."""
    if writer is output.write_csv:
        return stored.write_csv(out)
    cells = stored.cells()
    if cells is None:
        return None
    stored.drop()           # its memory, before the lines are made
    return cells.write(out)


def _csv_field(column: str, kind: str) -> str:
    """A field as output.write_csv writes the value (csv.writer of str(),
    a datetime in ISO 8601 with Z, nothing for null), in SQL."""
    if kind == 'string':
        # csv.writer quotes a field holding its delimiter, its quote or
        # its line end (a carriage return alone is written as it is)
        return (f"CASE WHEN regexp_matches({column}, '[,\"\n]') "
                f"THEN '\"' || replace({column}, '\"', '\"\"') || '\"' "
                f"ELSE coalesce({column}, '') END")
    if kind == 'bool':
        return (f"CASE WHEN {column} THEN 'True' WHEN NOT {column} "
                "THEN 'False' ELSE '' END")
    if kind == 'time':
        return (f"coalesce(CASE WHEN strftime({column}, '%f') = '000000' "
                f"THEN strftime({column}, '%Y-%m-%dT%H:%M:%SZ') "
                f"ELSE strftime({column}, '%Y-%m-%dT%H:%M:%S.%fZ') END, '')")
    if kind == 'real':
        # DuckDB writes a double as repr() does (the test holds them to
        # each other), but a NaN with its sign
        return (f"CASE WHEN isnan({column}) THEN 'nan' "
                f"ELSE coalesce(CAST({column} AS VARCHAR), '') END")
    return f"coalesce(CAST({column} AS VARCHAR), '')"


def _kind(duckdb_type: str) -> str | None:
    if duckdb_type in _INTEGERS:
        return 'integer'
    if duckdb_type in _REALS:
        return 'real'
    if duckdb_type in _TIMES:
        return 'time'
    if duckdb_type == 'BOOLEAN':
        return 'bool'
    if duckdb_type == 'VARCHAR':
        return 'string'
    return None


def _numeric(con, table, kind, cell, filled, ends) -> bool:
    """output.write_table's rule: right-aligned when every cell reads as
    a number (empty ones do). A column of text is not when its least or
    greatest cell is not; only when both are is every distinct cell
    asked."""
    if kind in ('integer', 'real'):
        return True
    if kind in ('bool', 'time') or not filled:
        return not filled        # (an empty column is not shown)
    if not all(looks_numeric(text) for text in ends):
        return False
    cursor = con.execute(f'SELECT DISTINCT {cell} FROM {table}')
    while True:
        fetched = cursor.fetchmany(_FETCH)
        if not fetched:
            return True
        if not all(looks_numeric(text) for text, in fetched):
            return False


def _cell(column: str, kind: str, name: str, with_unit: bool) -> str:
    """output.human() of a value of *kind*, then printable(), in SQL."""
    if kind == 'string':
        return f"coalesce({_printable(column)}, '')"
    if kind == 'bool':
        return f"CASE WHEN {column} THEN 'yes' WHEN NOT {column} THEN 'no' " \
               "ELSE '' END"
    if kind == 'time':
        return (f"coalesce(CASE WHEN hour({column}) = 0 AND "
                f"minute({column}) = 0 AND second({column}) = 0 "
                f"THEN strftime({column}, '%Y-%m-%d') "
                f"ELSE strftime({column}, '%Y-%m-%d %H:%M') END, '')")
    text = (_integer(column) if kind == 'integer'
            else _real(f'CAST({column} AS DOUBLE)'))
    if is_percent(name):
        text = f"{text} || '%'"
    elif with_unit and is_measured(name):
        text = (f"{text} || CASE WHEN u <> '' THEN ' ' || u "
                "ELSE '' END")
    return f"coalesce({text}, '')"


def _integer(column: str) -> str:
    """output._number() of an integer (one of 1e15 or more as its float)."""
    return (f'CASE WHEN {column} >= 1e15 OR {column} <= -1e15 '
            f'THEN {_real(f"CAST({column} AS DOUBLE)")} '
            f'WHEN {column} >= 10000 OR {column} <= -10000 '
            f"THEN format('{{:,}}', {column}) "
            f'ELSE CAST({column} AS VARCHAR) END')


def _real(value: str) -> str:
    """output._number() of a float (*value*, a DOUBLE). NaN compares equal
    to itself, and above every number, in DuckDB, and fmt writes its sign;
    past 2**53 (every such float a whole number) fmt writes 17 digits and
    zeros where Python writes the float's exact decimal, which its cast to
    VARINT is."""
    whole = f'CAST({value} AS BIGINT)'
    return (f"CASE WHEN isnan({value}) THEN 'nan' "
            f'WHEN isfinite({value}) AND {value} = trunc({value}) AND '
            f'abs({value}) < 1e15 THEN CASE WHEN abs({value}) >= 10000 '
            f"THEN format('{{:,}}', {whole}) ELSE CAST({whole} AS VARCHAR) "
            f'END WHEN isfinite({value}) AND abs({value}) >= {2**53} '
            f'THEN {_exact_with_commas(value)} '
            f"WHEN abs({value}) >= 1000 THEN format('{{:,.1f}}', {value}) "
            f"ELSE format('{{:.4g}}', {value}) END")


def _exact_with_commas(value: str) -> str:
    digits = f'CAST(CAST(abs({value}) AS VARINT) AS VARCHAR)'
    grouped = (f"reverse(rtrim(regexp_replace(reverse({digits}), "
               r"'(\d{3})', '\1,', 'g'), ','))")
    return f"(CASE WHEN {value} < 0 THEN '-' ELSE '' END) || {grouped} || '.0'"


def _printable(column: str) -> str:
    return (f'CASE WHEN regexp_matches({column}, {_ESCAPED}) '
            f'THEN {PRINTABLE_FUNCTION}({column}) ELSE {column} END')

