"""A node or pair check run on a batch of nodes in one job (fan_out.py
says how the job script does it): sanity and performance per group (a
node, or a pair of ring neighbours), through the check's own parser and
sanity rules. A group's label is its node, or 'a+b' for a pair.

- ``fanned_groups``: the groups' labels, in the order they were pinned;
- ``group_failures``: group -> why its output failed sanity;
- ``groups_not_measured``: group -> why its step measured nothing;
- perf variables ``<name>@<group>`` for every group that passed, each with
  the reference of ``<name>`` (``metric_groups`` maps them back).
The case fails only when no group passed, so that the good groups'
numbers are still logged. A dry run measures nothing: its perf variables
stay one per metric, so that its cost does not grow with the batch.
"""
from __future__ import annotations

import os

import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.exceptions import SanityError

from . import fan_out, launch
from .parsed_output import ParsedOutput


class FannedJob(ParsedOutput):
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

    # BenchmarkTest answers: pinned nodes, {perf variable: fact} tables
    def nodes_pinned(self) -> list[str]:
        return []

    def facts_by_metric(self) -> list[dict]:
        return []

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

    def measures_each_node_alone(self) -> bool:   # vm_size.py asks
        return self.fanned_out()

    def fanned_out(self) -> bool:
        return bool(self.fans_out and len(self.fan_groups()) > 1
                    and not self.is_local())

    def output_dir(self) -> str:
        if not self.measuring_group:
            return super().output_dir()
        return os.path.join(self.stagedir,
                            fan_out.node_dir(self.measuring_group))

    def stream_names(self) -> tuple[str, str]:
        if not self.measuring_group:
            return super().stream_names()
        return fan_out.STEP_OUT, fan_out.STEP_ERR

    def fan_out_over_nodes(self) -> None:
        """Last before run: a batch job runs the check once per group."""
        if not self.fanned_out():
            return
        groups = self.fan_groups()
        labels = [fan_out.group_label(group) for group in groups]
        # a path closing the ring names its first node twice
        nodes = list(dict.fromkeys(self.nodes_pinned()))
        ranks = self.num_tasks_per_node or self.num_tasks or 1
        launcher = self.job.launcher
        steps = {label: fan_out.step_launcher(
            launcher.registered_name, self.job.scheduler.registered_name,
            ranks, self.num_cpus_per_task, launcher.options, group)
            for label, group in zip(labels, groups)}
        if None in steps.values():
            self.skip(f'launcher {launcher.registered_name} cannot start '
                      f'one job step per node or pair: run with '
                      f'--node-batch 1')
        rounds = self.round_labels()
        command = ' '.join([self.executable, *self.executable_opts])
        keep = tuple(sn.evaluate(name) for name in (self.stdout, self.stderr))
        commands = {label: self.group_command(index, group)
                    for index, (label, group) in enumerate(zip(labels,
                                                               groups))}
        self.prerun_cmds += fan_out.script_lines(
            labels, steps, command, keep, rounds,
            {label: line for label, line in commands.items() if line})
        self.executable, self.executable_opts = 'wait', []
        launch.batch_shell(self.job)
        self.job.pin_nodes = nodes
        self.num_tasks = ranks * len(nodes)
        # a row's check_num_tasks: as the one-node or one-pair job's
        self.step_ranks = ranks * len(groups[0])
        self.num_tasks_per_node = ranks
        self.fanned_groups = labels
        self.keep_files.append(fan_out.FANOUT_DIR)

    def group_command(self, index: int, group: tuple[str, ...]) -> str:
        """The whole command line of the *index*-th group, run from the
        batch shell in its directory; '' = the group's job step running
        the check's command (a check whose command starts its own job
        steps says here how it is told its nodes)."""
        return ''

    def check_output(self) -> None:
        if not self.fanned_out():
            return super().check_output()
        self.check_job()
        if not self.job_nodes:
            # its first line records the nodes: the script never started
            raise SanityError('the batch job never started')
        failures, missing, passed = {}, {}, []
        for group in self.fanned_groups:
            directory = os.path.join(self.stagedir, fan_out.node_dir(group))
            why = fan_out.unmeasured_reason(
                group, fan_out.read_exit_code(
                    os.path.join(directory, fan_out.STEP_EXIT)),
                fan_out.last_line(os.path.join(directory, fan_out.STEP_ERR)))
            if why:
                missing[group] = why
                continue
            try:
                self._on_group(group, self.check_parsed)
            except SanityError as error:
                # as ReFrame words a one-node case's fail_reason
                failures[group] = f'sanity error: {error}'
            else:
                passed.append(group)
        self.group_failures, self.groups_not_measured = failures, missing
        if not passed:
            raise SanityError('nothing passed: ' + '; '.join(
                f'{group}: {why}' for group, why in {**failures,
                                                     **missing}.items()))

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

    def parsed(self):
        if self.fanned_out() and not self.measuring_group:
            return self._on_first_good_group(super().parsed)
        return super().parsed()

    def _on_first_good_group(self, read):
        # what is not per group (a STREAM method): the first good group
        groups = self.passed_groups() or list(self.fanned_groups)
        return self._on_group(groups[0], read)

    def perf_variables_per_group(self) -> None:
        """Last before performance: each perf variable once per group."""
        if not self.fanned_out() or self.measured_nothing():
            return
        target = self.current_partition.fullname
        table = {}
        per_group = {}
        passed = self.passed_groups()
        odd = self.groups_of_another_sku(self.fanned_groups)  # vm_size.py
        lookups = self.lookups_on(set(odd.values()))  # sku_references.py
        for name, function in self.perf_variables.items():
            self.node_metrics[name] = function.unit
            # the nodes that measured nothing get rows too (no value), as
            # their one-node cases would (config/results/rows/builder.py)
            for group in self.fanned_groups:
                var = fan_out.node_var(name, group)
                if group in passed:
                    per_group[var] = sn.make_performance_function(
                        self._value_on(group,
                                       lambda f=function: sn.evaluate(f)),
                        function.unit)
                self.metric_groups[var] = group
                self._copy_facts(name, var)
                reference = self.reference_of(target, name)
                if group in odd:
                    reference = self.reference_on_another_sku(
                        lookups[odd[group]], name, var, reference)
                if reference is not None:
                    table[var] = reference
        self.perf_variables = per_group
        for label, sku in odd.items():
            self.group_peaks[label], self.group_peak_sources[label] = \
                self.sku_peaks(sku)
        if table:
            tables = self.reference_tables()
            tables[target] = {**tables.get(target, {}), **table}
            self.reference = tables

    def _copy_facts(self, name: str, var: str) -> None:
        """What a row of *var* says about its metric, as for *name*."""
        # (reference_differences stay by metric: check_params holds them
        # whole, as a one-node case's row does)
        for found in self.facts_by_metric():
            if name in found:
                found[var] = found[name]
