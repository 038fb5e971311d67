"""One way to run a query, whichever engine answers: Log Analytics when a
workspace is given, else DuckDB over the local store."""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from scripts.query import library, needs
from scripts.query.result import QueryFailed, Result, Stream


class Runner:
    def __init__(self, workspace: str | None = None,
                 filters: library.Filters | None = None,
                 results_dir: Path | None = None,
                 now: dt.datetime | None = None):
        self.workspace = workspace
        self.filters = filters
        self.results_dir = results_dir
        self.now = now             # fixed 'now' for the local engine
        self._con = None          # a DuckDB connection or a LogsQueryClient
        self._reading = None      # what the local connection has read
        self._expected = None     # what the queries to come will need
        self._texts = []          # their KQL, translated as the store is read

    def expect(self, *queries: str | library.Query) -> None:
        """Say which queries will run, so that the local store is read once
        for all of them (the report runs five)."""
        for query in queries:
            query = self._query(query)
            wanted = self._needs(query)
            self._expected = (wanted if self._expected is None
                              else self._expected.union(wanted))
            self._texts.append(_local_text(query))

    @staticmethod
    def _query(name_or_file) -> library.Query:
        return (name_or_file if isinstance(name_or_file, library.Query)
                else library.resolve(name_or_file))

    def _needs(self, query: library.Query) -> needs.Reading:
        now = self.now or dt.datetime.now(dt.timezone.utc)
        return needs.reading(query, self.filters, now)

    def _local(self, query: library.Query, text: str):
        """The local connection, read again (once) only when this query
        (its KQL *text*) needs more of the store than it holds."""
        if self.results_dir is None:
            from config.results.store import files as store
            store.existing_home()    # a typo must not answer "no rows"
        wanted = self._needs(query)
        if self._reading is not None and self._reading.covers(wanted):
            return self._con
        if self._expected is not None:
            wanted = wanted.union(self._expected)
        if self._reading is not None:
            wanted = wanted.union(self._reading)
        self._con = _engine('local').connect(
            self.results_dir, wanted, self.filters, defer=True,
            queries=tuple(dict.fromkeys([text, *self._texts])), now=self.now)
        self._reading = wanted
        return self._con

    def notes(self) -> list[str]:
        """What the reader should know about the rows it read."""
        if self.workspace or self._con is None:
            return []
        engine = _engine('local')
        skipped = engine.unreadable_lines(self._con)
        if not skipped:
            return []
        _name_unreadable_lines(engine.damaged_files(self._con))
        return [f'{skipped} line(s) of the local store could not be read '
                '(a session still writing, or a damaged file) and were left '
                'out']

    def rows_read(self) -> int | None:
        """How many rows (with the filters) the local connection read for
        the queries run so far; None with no local connection."""
        if self.workspace or self._con is None:
            return None
        counted = _engine('local').run(
            self._con, f'{library.BASE_FUNCTION} | count\n', self.now)
        return counted.rows[0][0] if counted.rows else 0

    @property
    def where(self) -> str:
        return (f'Log Analytics workspace {self.workspace}' if self.workspace
                else 'the local store')

    def run(self, name_or_file: str | library.Query) -> Result:
        return self.stream(name_or_file).result()

    def stream(self, name_or_file: str | library.Query) -> Stream:
        """The query's rows a chunk at a time (from Log Analytics, all in
        one); locally the connection is free for other queries only once
        the last chunk has been read."""
        query = self._query(name_or_file)
        if self.workspace:
            engine = _engine('cloud')
            if self._con is None:
                self._con = engine.connect()
            return engine.run(self._con, self.workspace,
                              library.compose(query, self.filters)).stream()
        text = _local_text(query)
        return _engine('local').stream(self._local(query, text), text,
                                       self.now)

    def read(self, name_or_file: str | library.Query) -> None:
        """Reads the local store for this query now (nothing with a
        workspace), so that notes() speaks of it before its rows."""
        query = self._query(name_or_file)
        if not self.workspace:
            self._local(query, _local_text(query))

    def write(self, name_or_file: str | library.Query, writer, out) -> int:
        """*writer*'s text (output.write_table, write_csv or write_json) of
        the query's rows; locally a large table or CSV is made by DuckDB
        (a million rows never become Python values)."""
        query = self._query(name_or_file)
        if self.workspace:
            return writer(self.stream(query), out)
        text = _local_text(query)
        return _engine('local').write(self._local(query, text), text, writer,
                                      out, self.now)


def _local_text(query: library.Query) -> str:
    """The KQL the local engine runs for *query*: clusterproof_results is
    a view of its connection (the base, deduplicated once, with the
    filters), which the shipped base query reads as it is."""
    if query.name == library.BASE_NAME and not query.standalone \
            and query.text == library.shipped()[library.BASE_NAME].text:
        return f'{library.BASE_FUNCTION}\n'
    return query.text


def _name_unreadable_lines(paths: list[str]) -> None:
    """One warning per unreadable line, naming file and line, from the
    store's own reader: of the files the engine found damaged, alone."""
    from config.results.store import files as store
    for path in paths:
        for _ in store.file_rows(Path(path)):
            pass


def _engine(name: str):
    """The engine module; its packages come from requirements.txt."""
    try:
        if name == 'cloud':
            from scripts.query import cloud
            return cloud
        from scripts.query import local
        return local
    except ImportError as err:
        raise QueryFailed(
            f'{err.name} is not installed for {sys.executable}: run '
            '`bash scripts/setup.sh`, then `.venv/bin/python '
            'scripts/clusterproof ...` (or activate .venv)') from None
