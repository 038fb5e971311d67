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
    """--all streams: the table is formatted once, spooled (here to disk,
    past a tiny spool limit) and padded to the widths of every chunk; JSON
    and CSV are written row by row; all three exactly as for the whole."""
    base = result().rows
    # a wide value late in the stream widens its column from the top
    rows = base * 3 + [[DAY, 'NcclSingleNode\x1b[31m', 123456789.5, 'GB/s',
                        0.5, 1.0, 12345, ['a', 'b', 'c'], 'late\tnote']]
    whole = Result(result().columns, result().types, rows)
    stream = chunked(rows, 2)
    monkeypatch.setattr(output, '_SPOOL_CHARS', 16)
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

