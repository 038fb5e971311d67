"""How a query result reads: for people (units, percentages, aligned
columns) and for scripts (JSON, CSV)."""
import datetime as dt
import json

from scripts.query import output
from scripts.query.result import Result

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
