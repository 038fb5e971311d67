"""Sanity and performance of a test, both read through its tool's parser
(checks/parsers/): the plugin that turns a job's output into perf
variables, parsed once, per node or pair where a batch job ran the check
once per group (fan_out_results.py). BenchmarkTest's hooks call its steps.
"""
from __future__ import annotations

import glob
import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.exceptions import SanityError

from .. import parsers
from . import fan_out, fan_out_results, job_end


def _parse_now(test, path: str, options: dict) -> parsers.ParseResult:
    if not os.path.isfile(path):
        guard = job_end.guard_message(
            os.path.join(test.stagedir, sn.evaluate(test.stderr)))
        return parsers.failure(
            test.parser_tool,
            guard or f'{os.path.basename(path)} was not written: '
                     f'the job produced no {test.parser_tool} output')
    with open(path, errors='replace') as fp:
        return parsers.parse(test.parser_tool, fp.read(), **options)


class ParsedOutput(rfm.RegressionTestPlugin):
    #: Key of :data:`checks.parsers.TOOLS` that reads this test's output.
    parser_tool = variable(str)

    #: What to parse: 'stdout', 'stderr', or a file (glob) in the stage dir.
    parsed_stream = variable(str, value='stdout')

    #: Keyword arguments for the parser (message size, expected ranks...).
    parser_options = variable(typ.Dict[str, object], value={})

    #: Metric name -> unit; each becomes a performance variable.
    perf_metrics = variable(typ.Dict[str, str], value={})

    #: The parses of this run, made once each (parsed_once); not logged.
    parse_results = variable(typ.Dict[str, object], value={},
                             loggable=False)

    # A batch job: the check run once per node or pair (fan_out_results.py)
    #: True where the check can run once per node of a batch job (its
    #: command is one single-node run); see plan.py's FANOUT_CHECKS.
    fans_out = variable(typ.Bool, value=False)

    #: Nodes per measurement: 1 (node checks), 2 (pair checks: the pin is
    #: a path around the ring, each node with the next one).
    fan_group_size = variable(int, value=1)

    #: The groups this case measured one by one ([] = not fanned out).
    fanned_groups = variable(typ.List[str], value=[])
    group_failures = variable(typ.Dict[str, str], value={})
    groups_not_measured = variable(typ.Dict[str, str], value={})

    #: Perf variable -> the group it measured ('triad_bw@hb-3' -> 'hb-3',
    #: 'lat@a+b' -> 'a+b').
    metric_groups = variable(typ.Dict[str, str], value={})

    #: The check's own perf variables (name -> unit), each measured per node.
    node_metrics = variable(typ.Dict[str, str], value={})

    #: Ranks of each node's step (its row's check_num_tasks, as a one-node
    #: job's); 0 = not fanned out.
    step_ranks = variable(int, value=0)

    #: Group -> {metric: peak} and {metric: its source}, for a group
    #: with a node of another VM size than the partition declares (its
    #: rows say that size's peaks, as its one-node job's would).
    group_peaks = variable(typ.Dict[str, typ.Dict[str, float]], value={})
    group_peak_sources = variable(typ.Dict[str, typ.Dict[str, str]],
                                  value={})

    #: The group whose output is being read ('' = the job's own output).
    measuring_group = variable(str, value='', loggable=False)

    # The output and its parse
    def output_dir(self) -> str:
        """Where the tool wrote its output (the group's own directory while
        a batch job's group is read)."""
        if not self.measuring_group:
            return self.stagedir
        return os.path.join(self.stagedir,
                            fan_out.node_dir(self.measuring_group))

    def stream_names(self) -> tuple[str, str]:
        """The tool's stdout and stderr files in output_dir()."""
        if self.measuring_group:
            return fan_out.STEP_OUT, fan_out.STEP_ERR
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
        return self.parsed_once(f'{path} {sorted(options.items())!r}',
                                lambda: _parse_now(self, path, options))

    def parsed_once(self, key: str, make) -> parsers.ParseResult:
        """*make()* once per run, kept with the parses (a check that
        reworks its parse: several files, metrics added)."""
        if key not in self.parse_results:
            self.parse_results[key] = make()
        return self.parse_results[key]

    def parsed(self) -> parsers.ParseResult:
        """The parse of this test's output (parsed_stream); in a batch job,
        outside any group, the first good group's."""
        if self.fanned_out() and not self.measuring_group:
            return self._on_first_good_group(self._parsed_here)
        return self._parsed_here()

    def _parsed_here(self) -> parsers.ParseResult:
        return self.parse_file(self.parsed_path(), **self.parser_options)

    def output_problem(self, result: parsers.ParseResult) -> str | None:
        """What is wrong with an output its parser accepted (a check that
        knows more, e.g. HPL's rows against its HPL.dat), or None."""
        return None

    def check_job(self) -> None:
        """Raise SanityError where the job itself says why it measured
        nothing: killed at its time limit, or its tool guard stopped it."""
        problem = job_end.problem(
            self.job.state, self.time_limit,
            os.path.join(self.stagedir, sn.evaluate(self.stderr)))
        if problem:
            raise SanityError(problem)

    def check_parsed(self) -> None:
        """Raise SanityError where the output is not a good run."""
        result = self.parsed()
        if not result.ok:
            raise SanityError(result.reason)
        problem = self.output_problem(result)
        if problem:
            raise SanityError(problem)

    def check_output(self) -> None:
        if self.fanned_out():
            return fan_out_results.check_groups(self)
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

    # A batch job (BenchmarkTest says which nodes, and the facts by metric)
    def fan_groups(self) -> list[tuple[str, ...]]:
        return fan_out.node_groups(self.nodes_pinned(), self.fan_group_size)

    def fan_rounds(self) -> int:
        """Runs one after the other: 1, or the rounds of node-disjoint pairs
        or of a partition that measures few nodes at once."""
        if not self.fanned_out():
            return 1
        return len(self.round_labels() or [()])

    def round_labels(self) -> list[list[str]] | None:
        """The groups' labels in rounds, one round after the other; None =
        every group at once."""
        return fan_out.group_rounds(
            self.fan_groups(),
            self.current_partition.extras.get(fan_out.AT_ONCE))

    def measures_each_node_alone(self) -> bool:   # node_probe.py asks
        return self.fanned_out()

    def fanned_out(self) -> bool:
        return bool(self.fans_out and len(self.fan_groups()) > 1
                    and not self.is_local())

    def group_command(self, index: int, group: tuple[str, ...]) -> str:
        """The whole command line of the *index*-th group, run from the
        batch shell in its directory; '' = the group's job step running
        the check's command (a check whose command starts its own job
        steps says here how it is told its nodes)."""
        return ''

    def measured_nothing(self) -> bool:
        """A --dry-run: no job was submitted. (ReFrame also evaluates the
        perf variables of a failed test in its dry-run mode, to log them:
        that job ran, and its rows are per group.)"""
        return self.is_dry_run() and self.job.jobid is None

    def passed_groups(self) -> list[str]:
        return [group for group in self.fanned_groups
                if group not in self.group_failures
                and group not in self.groups_not_measured]

    def _on_group(self, group: str, read):
        previous, self.measuring_group = self.measuring_group, group
        try:
            return read()
        finally:
            self.measuring_group = previous

    @sn.deferrable
    def _value_on(self, group: str, read):
        # *read* is a plain callable: a deferred argument would be
        # evaluated before this runs, on no group in particular
        return self._on_group(group, read)

    def _on_first_good_group(self, read):
        # what is not per group (a STREAM method): the first good group
        groups = self.passed_groups() or list(self.fanned_groups)
        return self._on_group(groups[0], read)

    # Steps, called by BenchmarkTest's hooks
    def add_parsed_perf_variables(self) -> None:
        for name, unit in self.perf_metrics.items():
            self.perf_variables.setdefault(
                name,
                sn.make_performance_function(self.parsed_metric(name), unit))

    def fan_out_over_nodes(self) -> None:
        fan_out_results.spread_over_nodes(self)

    def perf_variables_per_group(self) -> None:
        fan_out_results.perf_variables_per_group(self)
