"""Sanity and performance of a test, both read through its tool's parser."""
from __future__ import annotations

import glob
import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.exceptions import SanityError

from .. import parsers
from .job_end import time_limit_reason

# Lines a job script prints when it cannot even start the tool
# (see external_tool.py); they explain a failure better than the parser.
GUARD_PREFIX = 'clusterproof: '


def _read(path: str) -> str:
    with open(path, errors='replace') as fp:
        return fp.read()


def _guard_message(stderr_path: str | None) -> str | None:
    if not stderr_path or not os.path.isfile(stderr_path):
        return None
    for line in _read(stderr_path).splitlines():
        if line.startswith(GUARD_PREFIX):
            return line[len(GUARD_PREFIX):]
    return None


class ParsedOutput(rfm.RegressionTestPlugin):
    #: Key of :data:`checks.parsers.TOOLS` that reads this test's output.
    parser_tool = variable(str)

    #: What to parse: 'stdout', 'stderr', or a file (glob) in the stage dir.
    parsed_stream = variable(str, value='stdout')

    #: Keyword arguments for the parser (message size, expected ranks...).
    parser_options = variable(typ.Dict[str, object], value={})

    #: Metric name -> unit; each becomes a performance variable.
    perf_metrics = variable(typ.Dict[str, str], value={})

    #: The parses of this run's output files, made once each (file and
    #: parser options -> ParseResult); not logged.
    parse_results = variable(typ.Dict[str, object], value={},
                             loggable=False)

    def _stage_path(self, name: str) -> str:
        return os.path.join(self.stagedir, name)

    def output_dir(self) -> str:
        """Where the tool wrote its output."""
        return self.stagedir

    def stream_names(self) -> tuple[str, str]:
        """The tool's stdout and stderr files in output_dir()."""
        return sn.evaluate(self.stdout), sn.evaluate(self.stderr)

    def parsed_path(self) -> str:
        directory = self.output_dir()
        stdout, stderr = self.stream_names()
        name = {'stdout': stdout, 'stderr': stderr}.get(self.parsed_stream)
        if name:
            return os.path.join(directory, name)
        pattern = os.path.join(directory, self.parsed_stream)
        matches = sorted(glob.glob(pattern))
        return matches[-1] if matches else pattern

    def parse_file(self, path: str, **options) -> parsers.ParseResult:
        """Parse one output file of this test, once per run; a missing file
        is a failure."""
        key = f'{path} {sorted(options.items())!r}'
        if key not in self.parse_results:
            self.parse_results[key] = self._parse_file_now(path, options)
        return self.parse_results[key]

    def _parse_file_now(self, path: str, options: dict):
        if not os.path.isfile(path):
            guard = _guard_message(self._stage_path(sn.evaluate(self.stderr)))
            return parsers.failure(
                self.parser_tool,
                guard or f'{os.path.basename(path)} was not written: '
                         f'the job produced no {self.parser_tool} output')
        return parsers.parse(self.parser_tool, _read(path), **options)

    def parsed(self) -> parsers.ParseResult:
        """The parse of this test's output (parsed_stream)."""
        return self.parse_file(self.parsed_path(), **self.parser_options)

    def output_problem(self, result: parsers.ParseResult) -> str | None:
        """What is wrong with an output its parser accepted (a check that
        knows more, e.g. HPL's rows against its HPL.dat), or None."""
        return None

    def check_job(self) -> None:
        """Raise SanityError where the job itself says why it measured
        nothing: killed at its time limit, or its tool guard stopped it."""
        stderr_path = self._stage_path(sn.evaluate(self.stderr))
        killed = time_limit_reason(self.job.state, self.time_limit,
                                   stderr_path)
        if killed:
            raise SanityError(killed)
        guard = _guard_message(stderr_path)
        if guard:
            raise SanityError(guard)

    def check_parsed(self) -> None:
        """Raise SanityError where the output is not a good run."""
        result = self.parsed()
        if not result.ok:
            raise SanityError(result.reason)
        problem = self.output_problem(result)
        if problem:
            raise SanityError(problem)

    def check_output(self) -> None:
        self.check_job()
        self.check_parsed()

    @sn.deferrable
    def _assert_parsed_ok(self):
        self.check_output()
        return True

    @sanity_function
    def assert_output_ok(self):
        return self._assert_parsed_ok()

    @sn.deferrable
    def parsed_metric(self, name: str) -> float:
        result = self.parsed()
        if name not in result.metrics:
            raise SanityError(
                f'{self.parser_tool} output has no {name!r} value')
        return result.metrics[name].value

    def add_parsed_perf_variables(self) -> None:
        for name, unit in self.perf_metrics.items():
            self.perf_variables.setdefault(
                name,
                sn.make_performance_function(self.parsed_metric(name), unit))
