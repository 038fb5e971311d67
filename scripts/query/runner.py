"""One way to run a query, whichever engine answers: Log Analytics when a
workspace is given, else DuckDB over the local store."""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from scripts.query import library
from scripts.query.result import QueryFailed, Result


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

    def notes(self) -> list[str]:
        """What the reader should know about the rows it read."""
        if self.workspace or self._con is None:
            return []
        skipped = _engine('local').unreadable_lines(self._con)
        if not skipped:
            return []
        _name_unreadable_lines(self.results_dir)
        return [f'{skipped} line(s) of the local store could not be read '
                '(a session still writing, or a damaged file) and were left '
                'out']

    @property
    def where(self) -> str:
        return (f'Log Analytics workspace {self.workspace}' if self.workspace
                else 'the local store')

    def run(self, name_or_file: str | library.Query) -> Result:
        query = (name_or_file if isinstance(name_or_file, library.Query)
                 else library.resolve(name_or_file))
        text = library.compose(query, self.filters)
        engine = _engine('cloud' if self.workspace else 'local')
        if self._con is None:
            if not self.workspace and self.results_dir is None:
                from config.results import store
                store.existing_home()    # a typo must not answer "no rows"
            self._con = (engine.connect() if self.workspace
                         else engine.connect(self.results_dir))
        if self.workspace:
            return engine.run(self._con, self.workspace, text)
        return engine.run(self._con, text, self.now)


def _name_unreadable_lines(results_dir: Path | None) -> None:
    """One warning per unreadable line, naming file and line, from the
    store's own reader (read again only when the engine found damage)."""
    from config.results import store
    for path in store.session_files(results_dir, warn=lambda message: None):
        for _ in store.file_rows(path):
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
