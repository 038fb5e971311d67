"""The local engine's table made by DuckDB (scripts/query/sql_table.py)
must be output.write_table()'s text to the byte: on every shipped query of
the golden store, and on every kind of value a column can hold."""
import datetime as dt
import io
import sys

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scripts.query import library, output, sql_table
from scripts.query.result import Result, plain
from scripts.query.runner import Runner, _local_text
from tests import query_store


@pytest.fixture(scope='module')
def runner(tmp_path_factory):
    home = tmp_path_factory.mktemp('store')
    query_store.build(home)
    query_store.settle(home)
    return Runner(results_dir=home / 'results', now=query_store.NOW)


QUERIES = [name for name in library.shipped() if name != library.BASE_NAME]


def stored_cells(runner, query):
    """The query's rows stored on the runner's connection, and their cells
    (None for Python's)."""
    text = _local_text(query)
    con = runner._local(query, text)
    sql, parameters = con.translator.translate(text, runner.now)
    stored = sql_table.Stored(con.duckdb, sql, parameters)
    return stored, stored.cells()


@pytest.mark.parametrize('name', QUERIES + ['outliers only'])
def test_every_shipped_query_reads_the_same_from_duckdb(runner, name,
                                                        monkeypatch):
    """Each query through DuckDB's table, whatever its size: the same text
    as Python's. Only a query with a dynamic column (lists) is Python's."""
    query = (library.outliers_only() if name == 'outliers only'
             else library.resolve(name))
    by_python = output.table(runner.run(query))
    monkeypatch.setattr(sql_table, 'PYTHON_ROWS', 0)
    by_duckdb = io.StringIO()
    assert runner.write_table(query, by_duckdb) == len(runner.run(query).rows)
    assert by_duckdb.getvalue() == by_python
    stored, cells = stored_cells(runner, query)
    dynamic = 'dynamic' in runner.run(query).types
    assert (cells is None) == dynamic
    if cells is not None:
        written = io.StringIO()
        assert cells.write(written) == stored.rows
        assert written.getvalue() == by_python
    stored.drop()


def test_the_golden_store_has_queries_of_both_paths(runner):
    """So that the test above checks each path somewhere."""
    dynamic = {'dynamic' in runner.run(name).types for name in QUERIES}
    assert dynamic == {True, False}


def test_a_small_result_is_pythons_and_a_large_one_duckdbs(runner,
                                                          monkeypatch):
    made = []
    write = sql_table.Cells.write
    monkeypatch.setattr(sql_table.Cells, 'write', lambda self, out:
                        made.append(self) or write(self, out))
    query = library.resolve('node_outliers')
    rows = len(runner.run(query).rows)
    for limit, by_duckdb in ((rows, False), (rows - 1, True)):
        monkeypatch.setattr(sql_table, 'PYTHON_ROWS', limit)
        made.clear()
        written = io.StringIO()
        assert runner.write_table(query, written) == rows
        assert bool(made) == by_duckdb
        assert written.getvalue() == output.table(runner.run(query))
    # the temporary tables are gone either way
    con = runner._local(query, _local_text(query))
    assert not con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE "
        "regexp_matches(table_name, '^_clusterproof_(rows|cells)_')"
    ).fetchall()


COLUMNS = [('day', 'TIMESTAMPTZ'), ('test', 'VARCHAR'), ('value', 'DOUBLE'),
           ('check_perf_unit', 'VARCHAR'), ('worse_pct', 'DOUBLE'),
           ('peers', 'BIGINT'), ('outlier', 'BOOLEAN'),
           ('peer_median', 'INTEGER'), ('of_reference', 'DOUBLE'),
           ('a "quoted" name', 'VARCHAR'), ('total_runs', 'HUGEINT'),
           ('started', 'TIMESTAMP')]
KUSTO = {'TIMESTAMPTZ': 'datetime', 'VARCHAR': 'string', 'DOUBLE': 'real',
         'BIGINT': 'long', 'INTEGER': 'int', 'BOOLEAN': 'bool',
         'HUGEINT': 'long', 'TIMESTAMP': 'datetime'}


def both_ways(rows, columns=COLUMNS) -> tuple[str, str]:
    """(DuckDB's table, Python's table) of *rows* stored in DuckDB."""
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
    by_duckdb = io.StringIO()
    stored = sql_table.Stored(con, sql, None)
    cells = stored.cells()
    assert cells is not None
    assert cells.write(by_duckdb) == len(rows) == stored.rows
    stored.drop()
    kinds = [KUSTO[kind] for _, kind in columns]
    fetched = [[plain(value, kind) for value, kind in zip(row, kinds)]
               for row in con.execute(sql).fetchall()]
    return by_duckdb.getvalue(), output.table(
        Result([name for name, _ in columns], kinds, fetched))


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
         '1_000', '١٢', None]


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
                     DAY.replace(tzinfo=None) + dt.timedelta(seconds=at)])
    by_duckdb, by_python = both_ways(rows)
    assert by_duckdb == by_python
    assert '\\x1b' in by_duckdb and 'nan' in by_duckdb


@pytest.mark.parametrize('texts', [['12', '3.5%', '', '1,234 GB/s', None],
                                   ['12', 'x'], ['', None], ['inf', '1_0'],
                                   ['١٢', '7'], ['nan%', ' 4']])
def test_a_column_of_numbers_as_text_is_aligned_as_python_aligns_it(texts):
    columns = [('note', 'VARCHAR'), ('runs', 'BIGINT')]
    by_duckdb, by_python = both_ways([[text, 1] for text in texts], columns)
    assert by_duckdb == by_python


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(
    st.datetimes(min_value=dt.datetime(1970, 1, 1),
                 max_value=dt.datetime(2200, 1, 1),
                 timezones=st.just(dt.timezone.utc)),
    st.text(st.characters(exclude_categories=['Cs'],
                          exclude_characters='\x00')),
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
    by_duckdb, by_python = both_ways([list(row) for row in rows])
    assert by_duckdb == by_python


def test_no_rows_and_no_columns_read_the_same():
    assert both_ways([]) == ('(no rows)\n', '(no rows)\n')
    by_duckdb, by_python = both_ways([['GB/s'], [None]],
                                     [('check_perf_unit', 'VARCHAR')])
    assert by_duckdb == by_python == '\n\n\n\n'


def test_a_dynamic_column_is_left_to_python():
    con = duckdb.connect()
    for sql in ("SELECT ['a'] AS nodes", 'SELECT 1.5::DECIMAL(4,1) AS d',
                'SELECT 1.5::FLOAT AS f', "SELECT DATE '2026-01-02' AS d"):
        assert sql_table.Stored(con, sql, None).cells() is None


def test_the_escapes_are_printables_for_every_character():
    con = duckdb.connect()
    con.execute(sql_table._PRINTABLE_MACRO)
    codes = [code for code in range(sys.maxunicode + 1)
             if not 0xd800 <= code <= 0xdfff]
    escaped = con.execute(
        f'SELECT {sql_table.PRINTABLE_FUNCTION}(chr(c::INTEGER)) FROM '
        'unnest(?) AS t(c) ORDER BY c', [codes]).fetchall()
    assert [text for text, in escaped] == \
        [output.printable(chr(code)) for code in codes]
    mixed = 'a\x1bb\nc\x85é\u2028'
    assert con.execute(f'SELECT {sql_table.PRINTABLE_FUNCTION}(?)',
                       [mixed]).fetchall()[0][0] == output.printable(mixed)


def test_the_trailing_spaces_are_those_rstrip_strips_from_a_cell():
    assert set(sql_table._TRAILING) == {
        chr(code) for code in range(sys.maxunicode + 1)
        if chr(code).isspace() and output.printable(chr(code)) == chr(code)}


def test_the_cli_prints_duckdbs_table(runner, capsys, monkeypatch):
    """clusterproof query's table is the runner's write_table()."""
    from scripts.cli import main
    monkeypatch.setattr(sql_table, 'PYTHON_ROWS', 0)
    written = []
    made = sql_table.Cells.write
    monkeypatch.setattr(sql_table.Cells, 'write',
                        lambda self, out: written.append(made(self, out))
                        or written[-1])
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(runner.results_dir.parent))
    assert main.main(['query', 'node_outliers', '--all', '--since',
                      '2026-11-01']) == 0
    table = capsys.readouterr().out
    assert written and written[0] == len(table.splitlines()) - 2
    assert table.splitlines()[0].split()[:3] == ['completed', 'session_id',
                                                 'cluster']
