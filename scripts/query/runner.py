"""One way to run a query, whichever engine answers: Log Analytics when a
workspace is given, else DuckDB over the local store."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from scripts.query import library
from scripts.query.result import Result


class Runner:
    def __init__(self, workspace: str | None = None,
                 filters: library.Filters | None = None,
                 results_dir: Path | None = None,
                 now: dt.datetime | None = None):
        self.workspace = workspace
        self.filters = filters
        self.results_dir = results_dir
        self.now = now             # fixed 'now' for the local engine
        self._con = None

    @property
    def where(self) -> str:
        return (f'Log Analytics workspace {self.workspace}' if self.workspace
                else 'the local store')

    def run(self, name_or_file: str | library.Query) -> Result:
        query = (name_or_file if isinstance(name_or_file, library.Query)
                 else library.resolve(name_or_file))
        text = library.compose(query, self.filters)
        if self.workspace:
            from scripts.query import cloud
            return cloud.run(self.workspace, text)
        from scripts.query import local
        if self._con is None:
            self._con = local.connect(self.results_dir)
        return local.run(self._con, text, self.now)
