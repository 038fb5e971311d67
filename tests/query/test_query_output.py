"""How a query result reads: for people (units, percentages, aligned
columns) and for scripts (JSON, CSV)."""
import datetime as dt
import io
import json

from scripts.query import output
from scripts.query.result import Result, Stream

DAY = dt.datetime(2026, 11, 20, tzinfo=dt.timezone.utc)


def result():
    return Result(
        ['day', 'test', 'median_value', 'check_perf_unit', 'of_reference',
         'pct_of_peak', 'runs', 'nodes', 'note'],
        ['datetime', 'string', 'real', 'string', 'real', 'real', 'long',
         'dynamic', 'string'],
        [[DAY, 'StreamCheck', 706000.0, 'MB/s', 1.009, 76.6, 4,
          ['hb-1', 'hb-2'], None],
         [DAY, 'OsuPointToPoint', 2.4, 'us', None, None, 7, [], None]])


def test_people_see_units_percent_and_no_empty_column():
    header, rule, stream, osu = output.table(result()).splitlines()
    assert header.split() == ['day', 'test', 'median_value', 'of_reference',
                              'pct_of_peak', 'runs', 'nodes']
    assert '706,000 MB/s' in stream and '76.6%' in stream
    assert '1.009' in stream and '1.009 MB/s' not in stream
    assert '2.4 us' in osu and 'hb-1,hb-2' in stream
    # Numbers are right-aligned under their header.
    end = header.index('median_value') + len('median_value')
    assert stream[:end].endswith('MB/s') and osu[:end].endswith('2.4 us')


def test_scripts_get_raw_values():
    rows = json.loads(output.as_json(result()))
    assert rows[0]['day'] == '2026-11-20T00:00:00Z'
    assert rows[0]['median_value'] == 706000.0
    assert rows[0]['nodes'] == ['hb-1', 'hb-2']
    lines = output.as_csv(result()).splitlines()
    assert lines[0].startswith('day,test,median_value,check_perf_unit')
    assert lines[1].startswith('2026-11-20T00:00:00Z,StreamCheck,706000.0,'
                               'MB/s,1.009,76.6,4,"[""hb-1"", ""hb-2""]",')


def test_no_rows_says_so():
    assert output.table(Result(['a'], ['string'], [])) == '(no rows)\n'


def chunked(rows, size):
    """The rows of result() as a stream of chunks of *size* rows."""
    whole = result()
    return lambda: Stream(whole.columns, whole.types, iter(
        [rows[i:i + size] for i in range(0, len(rows), size)]))


def test_a_stream_in_chunks_prints_what_the_whole_result_prints(monkeypatch):
    """--all streams: the table is padded to the widths of every chunk;
    JSON and CSV are written row by row; all three exactly as for the
    whole."""
    base = result().rows
    # a wide value late in the stream widens its column from the top
    rows = base * 3 + [[DAY, 'NcclSingleNode\x1b[31m', 123456789.5, 'GB/s',
                        0.5, 1.0, 12345, ['a', 'b', 'c'], 'late\tnote']]
    whole = Result(result().columns, result().types, rows)
    stream = chunked(rows, 2)
    for write, form in ((output.write_table, output.table),
                        (output.write_json, output.as_json),
                        (output.write_csv, output.as_csv)):
        buffer = io.StringIO()
        assert write(stream(), buffer) == len(rows)
        assert buffer.getvalue() == form(whole)
    table = output.table(whole).splitlines()
    assert table[1].split('  ')[1] == '-' * len('NcclSingleNode\\x1b[31m')
    assert 'late\\tnote' in table[-1] and '\\x1b[31m' in table[-1]
    assert json.loads(output.as_json(whole))[-1]['note'] == 'late\tnote'


def test_an_empty_stream_reads_as_an_empty_result():
    empty = Stream(['a'], ['string'], iter([]))
    buffer = io.StringIO()
    assert output.write_table(empty, buffer) == 0
    assert buffer.getvalue() == '(no rows)\n'
    assert output.as_json(Result(['a'], ['string'], [])) == '[]\n'



def test_every_cell_is_what_human_writes():
    """write_table formats numbers and strings itself (its fast path, most
    of a million-row table's cost): each cell must still be human()'s
    text, escaped, for every kind of value, column and unit."""
    columns = ['median_value', 'pct_of_peak', 'runs', 'of_reference',
               'note', 'check_perf_unit']
    values = [0, 7, -12, 10000, 123456789, 2**60, 0.0, 1.5, -0.000123,
              999.99, 1000.0, 1234.56, 1e16, float('nan'), float('inf'),
              True, False, None, '', 'text', 'bell\x07', '12', '3%',
              DAY, DAY + dt.timedelta(hours=5, minutes=7), [], ['a', 'b'],
              [1, 2], {'k': 1}]
    units = ['GB/s', None, '', 'esc\x1b']
    rows = [[value, value, value, value, value, unit]
            for value in values for unit in units]
    assert output.table(Result(columns, ['real'] * 6, rows)) == \
        laid_out(columns, rows)
    # a column of numbers alone is right-aligned, one with text is not
    numbers = Result(['runs', 'note'], ['long', 'string'],
                     [[5, 'a'], [12345, 'bb'], [None, '']])
    lines = output.table(numbers).splitlines()
    assert lines[2] == '     5  a' and lines[3] == '12,345  bb'


def laid_out(columns, rows) -> str:
    """The table as human() writes each cell, laid out by the rules of
    write_table's docstring (the unit column and empty columns left out,
    numbers right-aligned)."""
    unit_at = columns.index('check_perf_unit')
    shown = [i for i in range(len(columns)) if i != unit_at]
    cells = [[output.printable(output.human(row[i], columns[i], row[unit_at]))
              for i in shown] for row in rows]
    keep = [at for at, i in enumerate(shown)
            if any(row[i] not in (None, '', []) for row in rows)]
    widths = [max(len(columns[shown[at]]), *(len(c[at]) for c in cells))
              for at in range(len(shown))]
    numeric = [all(output.looks_numeric(c[at]) for c in cells)
               for at in range(len(shown))]

    def line(values):
        return '  '.join(values[at].rjust(widths[at]) if numeric[at] else
                         values[at].ljust(widths[at])
                         for at in keep).rstrip() + '\n'
    return ''.join([line([columns[i] for i in shown]),
                    line(['-' * width for width in widths]),
                    *map(line, cells)])


def test_printable_escapes_every_control_character_and_nothing_else():
    """Each code point alone and among others: the C0 and C1 controls and
    DEL become escapes, every other character stays as it is (printable
    or not: a text Python finds printable is answered without translate)."""
    controls = {*range(0x20), *range(0x7f, 0xa0)}
    for code in [*range(0x3000), *range(0xfff0, 0x10000), 0x1f600,
                 0xe0001, 0x10ffff]:
        char = chr(code)
        expected = {'\n': '\\n', '\r': '\\r', '\t': '\\t'}.get(
            char, f'\\x{code:02x}') if code in controls else char
        assert output.printable(char) == expected
        assert output.printable(f'node {char}-01') == f'node {expected}-01'


def test_a_table_stops_at_its_row_limit_and_says_how_to_get_the_rest(
        monkeypatch):
    monkeypatch.setattr(output, 'TABLE_ROWS', 3)
    rows = result().rows * 3
    read = []

    def chunks():
        for start in range(0, len(rows), 2):
            read.append(start)
            yield rows[start:start + 2]
    buffer = io.StringIO()
    whole = result()
    assert output.write_table(Stream(whole.columns, whole.types, chunks()),
                              buffer) == 3
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 2 + 3 + 1
    assert lines[-1] == '(the first 3 rows; --csv or --json writes every row)'
    assert len(read) == 2                    # the rest never read
