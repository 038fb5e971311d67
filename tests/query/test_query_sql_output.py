"""The local engine's table and CSV made by DuckDB
(scripts/query/sql_output.py) must be output.write_table()'s and
write_csv()'s text to the byte: on every shipped query of the golden
store, and on every kind of value a column can hold."""
import datetime as dt
import io
import sys

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scripts.query import library, output, sql_output
from scripts.query.result import Result, plain
from scripts.query.runner import Runner, _local_text
from tests.support import query_store

FORMS = [output.write_table, output.write_csv]


@pytest.fixture(scope='module')
def runner(tmp_path_factory):
    home = tmp_path_factory.mktemp('store')
    query_store.build(home)
    query_store.settle(home)
    return Runner(results_dir=home / 'results', now=query_store.NOW)


QUERIES = [name for name in library.shipped() if name != library.BASE_NAME]


def by_python(writer, result: Result) -> str:
    text = io.StringIO()
    assert writer(result.stream(), text) == len(result.rows)
    return text.getvalue()


def by_duckdb(writer, con, sql, parameters=None) -> str | None:
    """sql_output's text of *sql*'s rows; None where it leaves it to
    Python. The temporary tables are dropped either way."""
    stored = sql_output.Stored(con, sql, parameters)
    text = io.StringIO()
    try:
        written = sql_output.write(stored, writer, text)
    finally:
        stored.drop()
    assert written in (None, stored.rows)
    assert not con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE "
        "regexp_matches(table_name, '^_clusterproof_(rows|cells)_')"
    ).fetchall()
    return None if written is None else text.getvalue()


@pytest.mark.parametrize('writer', FORMS, ids=['table', 'csv'])
@pytest.mark.parametrize('name', QUERIES + ['outliers only'])
def test_every_shipped_query_reads_the_same_from_duckdb(runner, name, writer,
                                                        monkeypatch):
    """Each query through DuckDB, whatever its size: the same text as
    Python's. Only a query with a dynamic column (lists) is Python's."""
    query = (library.outliers_only() if name == 'outliers only'
             else library.resolve(name))
    result = runner.run(query)
    expected = by_python(writer, result)
    monkeypatch.setattr(sql_output, 'PYTHON_ROWS', 0)
    written = io.StringIO()
    assert runner.write(query, writer, written) == len(result.rows)
    assert written.getvalue() == expected
    text = _local_text(query)
    con = runner._local(query, text)
    sql, parameters = con.translator.translate(text, runner.now)
    made = by_duckdb(writer, con.duckdb, sql, parameters)
    assert (made is None) == ('dynamic' in result.types)
    assert made in (None, expected)


def test_the_golden_store_has_queries_of_both_paths(runner):
    """So that the test above checks each path somewhere."""
    dynamic = {'dynamic' in runner.run(name).types for name in QUERIES}
    assert dynamic == {True, False}


@pytest.mark.parametrize('writer', [*FORMS, output.write_json],
                         ids=['table', 'csv', 'json'])
def test_a_small_result_is_pythons_and_a_large_one_duckdbs(runner, writer,
                                                          monkeypatch):
    made = []
    write = sql_output.write
    monkeypatch.setattr(sql_output, 'write', lambda *args:
                        made.append(write(*args)) or made[-1])
    query = library.resolve('node_outliers')
    result = runner.run(query)
    for limit, by_sql in ((len(result.rows), False),
                          (len(result.rows) - 1, writer is not
                           output.write_json)):
        monkeypatch.setattr(sql_output, 'PYTHON_ROWS', limit)
        made.clear()
        written = io.StringIO()
        assert runner.write(query, writer, written) == len(result.rows)
        assert any(text is not None for text in made) == by_sql
        assert written.getvalue() == by_python(writer, result)


COLUMNS = [('day', 'TIMESTAMPTZ'), ('test', 'VARCHAR'), ('value', 'DOUBLE'),
           ('check_perf_unit', 'VARCHAR'), ('worse_pct', 'DOUBLE'),
           ('peers', 'BIGINT'), ('outlier', 'BOOLEAN'),
           ('peer_median', 'INTEGER'), ('of_reference', 'DOUBLE'),
           ('a "quoted", name', 'VARCHAR'), ('total_runs', 'HUGEINT'),
           ('started', 'TIMESTAMP')]
KUSTO = {'TIMESTAMPTZ': 'datetime', 'VARCHAR': 'string', 'DOUBLE': 'real',
         'BIGINT': 'long', 'INTEGER': 'int', 'BOOLEAN': 'bool',
         'HUGEINT': 'long', 'TIMESTAMP': 'datetime'}


def both_ways(rows, columns=COLUMNS, forms=FORMS) -> list[tuple[str, str]]:
    """(DuckDB's text, Python's text) of *rows* stored in DuckDB, for each
    of *forms*."""
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    names = [f'"{name.replace(chr(34), 2 * chr(34))}"' for name, _ in columns]
    typed = ', '.join(f'{name} {kind}'
                      for name, (_, kind) in zip(names, columns))
    con.execute(f'CREATE TABLE t (n INTEGER, {typed})')
    for n, row in enumerate(rows):
        con.execute(f'INSERT INTO t VALUES (?{", ?" * len(columns)})',
                    [n, *row])
    sql = f'SELECT {", ".join(names)} FROM t ORDER BY n'
    kinds = [KUSTO[kind] for _, kind in columns]
    fetched = [[plain(value, kind) for value, kind in zip(row, kinds)]
               for row in con.execute(sql).fetchall()]
    result = Result([name for name, _ in columns], kinds, fetched)
    return [(by_duckdb(writer, con, sql), by_python(writer, result))
            for writer in forms]


def assert_same(pairs):
    for made, expected in pairs:
        assert made == expected


DAY = dt.datetime(2026, 11, 20, tzinfo=dt.timezone.utc)
EDGES = [0, 7, -12, 9999, 10000, -10000, 123456789, 2**53, 0.0, -0.0, 1.5,
         -0.000123, 0.00012345, 999.99, 999.95, 1000.0, 1234.56, 9999.5,
         1e15, -1e15, 1e15 - 1, 1e16, 1e-7, 1.23e-300, 5e-324,
         2**63 - 1, -2**63, 4.3135914667441024e+68, -2.5e300,
         1.7976931348623157e308, float('nan'), -float('nan'), float('inf'),
         -float('inf'), None]
TEXTS = ['', 'text', 'bell\x07', 'nl\nand\ttab', '12', '3%', '1,234',
         ' 5 GB/s', 'é', 'e\u0301', '👍🏽', 'nbsp\u00a0', 'em\u2003',
         'line\u2028', 'c1\x85\x9f', 'del\x7f', 'nul\x00end', 'inf', 'nan',
         '1_000', '١٢', 'say "hi"', 'cr\ronly', None]


def test_every_edge_value_reads_the_same():
    rows = []
    for at, number in enumerate(EDGES):
        text = TEXTS[at % len(TEXTS)]
        whole = (None if number is None or number != number
                 or not -2**63 <= number < 2**63 else int(number))
        rows.append([DAY + dt.timedelta(minutes=at * 7) if at % 3 else DAY,
                     text, number, ['GB/s', '', None, 'esc\x1b'][at % 4],
                     number, whole, [True, False, None][at % 3],
                     None if whole is None else whole % 2**31,
                     number, TEXTS[-1 - at % len(TEXTS)],
                     None if whole is None else whole * 2**40,
                     DAY.replace(tzinfo=None)
                     + dt.timedelta(seconds=at, microseconds=at % 2 * 250)])
    pairs = both_ways(rows)
    assert_same(pairs)
    table, csv = (made for made, _ in pairs)
    assert '\\x1b' in table and 'nan' in table
    assert '"say ""hi"""' in csv and '2026-11-20T00:00:01.000250Z' in csv


@pytest.mark.parametrize('texts', [['12', '3.5%', '', '1,234 GB/s', None],
                                   ['12', 'x'], ['', None], ['inf', '1_0'],
                                   ['١٢', '7'], ['nan%', ' 4']])
def test_a_column_of_numbers_as_text_is_aligned_as_python_aligns_it(texts):
    columns = [('note', 'VARCHAR'), ('runs', 'BIGINT')]
    assert_same(both_ways([[text, 1] for text in texts], columns))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(
    st.datetimes(min_value=dt.datetime(1970, 1, 1),
                 max_value=dt.datetime(2200, 1, 1),
                 timezones=st.just(dt.timezone.utc)),
    st.text(st.characters(exclude_categories=['Cs'])),
    st.floats(width=64),
    st.sampled_from(['GB/s', 'MB/s', '', None, 'µs\x1b']),
    st.one_of(st.none(), st.floats(min_value=-1e6, max_value=1e6)),
    st.integers(min_value=-2**63, max_value=2**63 - 1),
    st.one_of(st.none(), st.booleans()),
    st.integers(min_value=-2**31, max_value=2**31 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.one_of(st.none(), st.text(max_size=4)),
    st.integers(min_value=-2**120, max_value=2**120),
    st.datetimes(min_value=dt.datetime(1970, 1, 1),
                 max_value=dt.datetime(2200, 1, 1))), min_size=1, max_size=8))
def test_any_rows_read_the_same(rows):
    assert_same(both_ways([list(row) for row in rows]))


def test_no_rows_and_one_column_read_the_same():
    assert_same(both_ways([]))
    assert both_ways([])[0] == ('(no rows)\n', '(no rows)\n')
    for columns in ([('check_perf_unit', 'VARCHAR')], [('note', 'VARCHAR')]):
        pairs = both_ways([['GB/s'], [None], ['']], columns)
        assert_same(pairs)
    assert pairs[1][0] == 'note\nGB/s\n""\n""\n'


def test_a_dynamic_column_is_left_to_python():
    con = duckdb.connect()
    for sql in ("SELECT ['a'] AS nodes", 'SELECT 1.5::DECIMAL(4,1) AS d',
                'SELECT 1.5::FLOAT AS f', "SELECT DATE '2026-01-02' AS d"):
        for writer in FORMS:
            assert by_duckdb(writer, con, sql) is None


def test_the_escapes_are_printables_for_every_character():
    con = duckdb.connect()
    con.execute(sql_output._PRINTABLE_MACRO)
    codes = [code for code in range(sys.maxunicode + 1)
             if not 0xd800 <= code <= 0xdfff]
    escaped = con.execute(
        f'SELECT {sql_output.PRINTABLE_FUNCTION}(chr(c::INTEGER)) FROM '
        'unnest(?) AS t(c) ORDER BY c', [codes]).fetchall()
    assert [text for text, in escaped] == \
        [output.printable(chr(code)) for code in codes]
    mixed = 'a\x1bb\nc\x85é\u2028'
    assert con.execute(f'SELECT {sql_output.PRINTABLE_FUNCTION}(?)',
                       [mixed]).fetchall()[0][0] == output.printable(mixed)


def test_the_trailing_spaces_are_those_rstrip_strips_from_a_cell():
    assert set(sql_output._TRAILING) == {
        chr(code) for code in range(sys.maxunicode + 1)
        if chr(code).isspace() and output.printable(chr(code)) == chr(code)}


@pytest.mark.parametrize('form', [[], ['--csv']], ids=['table', 'csv'])
def test_the_cli_prints_duckdbs_text(runner, form, capsys, monkeypatch):
    """clusterproof query's table and CSV are the runner's write()."""
    from scripts.cli import main
    monkeypatch.setattr(sql_output, 'PYTHON_ROWS', 0)
    written = []
    write = sql_output.write
    monkeypatch.setattr(sql_output, 'write', lambda *args:
                        written.append(write(*args)) or written[-1])
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(runner.results_dir.parent))
    assert main.main(['query', 'node_outliers', '--all', '--since',
                      '2026-11-01', *form]) == 0
    text = capsys.readouterr().out
    header = 1 if form else 2
    assert written and written[0] == len(text.splitlines()) - header
    first = text.splitlines()[0]
    assert (first.split(',') if form else first.split())[:3] == \
        ['completed', 'session_id', 'cluster']
