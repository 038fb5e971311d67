"""One way to run a query, whichever engine answers: Log Analytics when a
workspace is given, else DuckDB over the local store."""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from scripts.query import library
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

    def expect(self, *queries: str | library.Query) -> None:
        """Which queries will run: nothing to prepare (one connection)."""

    def _local(self):
        """The local connection, opened once."""
        if self._con is None:
            if self.results_dir is None:
                from config.results.store import files as store
                store.existing_home()    # a typo must not answer "no rows"
            self._con = _engine('local').connect(self.results_dir,
                                                 self.filters)
        return self._con

    def close(self) -> None:
        """Lets go of the local connection (and the index's lock)."""
        if self._con is not None and not self.workspace:
            self._con.close()
        self._con = None

    def notes(self) -> list[str]:
        """What the reader should know about the rows it read."""
        if self.workspace or self._con is None:
            return []
        notes = list(self._con.notes)
        if self._con.unreadable:
            _name_unreadable_lines(self._con.damaged)
            notes.append(f'{self._con.unreadable} line(s) of the local store '
                         'could not be read (a session still writing, or a '
                         'damaged file) and were left out')
        return notes

    def rows_read(self) -> int | None:
        """How many rows (with the filters) the local connection holds;
        None with no local connection."""
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
        one); locally the connection is busy until the last is read."""
        query = library.resolve(name_or_file)
        if self.workspace:
            engine = _engine('cloud')
            if self._con is None:
                self._con = engine.connect()
            return engine.run(self._con, self.workspace,
                              library.compose(query, self.filters)).stream()
        return _engine('local').stream(self._local(), _local_text(query),
                                       self.now)

    def read(self, name_or_file: str | library.Query) -> None:
        """Reads the local store for this query now (nothing with a
        workspace), so that notes() speaks of it before its rows."""
        if not self.workspace:
            library.resolve(name_or_file)    # a name that is not: an error
            self._local()

    def write(self, name_or_file: str | library.Query, writer, out) -> int:
        """*writer*'s text (output.write_table, write_csv or write_json) of
        the query's rows (locally a large CSV or JSON by DuckDB)."""
        query = library.resolve(name_or_file)
        if self.workspace:
            return writer(self.stream(query), out)
        return _engine('local').write(self._local(), _local_text(query),
                                      writer, out, self.now)


def _local_text(query: library.Query) -> str:
    """The KQL the local engine runs: the shipped base is its connection's
    view clusterproof_results (deduplicated once, with the filters)."""
    return f'{library.BASE_FUNCTION}\n' if library.is_base(query) \
        else query.text


def _name_unreadable_lines(paths: list[str]) -> None:
    """One warning per unreadable line, naming file and line, from the
    store's own reader: of the files the engine found damaged, alone."""
    from config.results.store import files as store
    for path in paths:
        for _ in store.file_rows(Path(path)):
            pass


def _engine(name: str):
    """The engine module, imported when first used (requirements.txt)."""
    try:
        if name == 'cloud':
            from scripts.query import cloud as engine
        else:
            from scripts.query import local as engine
    except ImportError as err:
        raise QueryFailed(
            f'{err.name} is not installed for {sys.executable}: run '
            '`bash scripts/setup.sh`, then `.venv/bin/python '
            'scripts/clusterproof ...` (or activate .venv)') from None
    return engine
