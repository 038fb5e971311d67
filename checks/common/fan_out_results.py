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

The variables are ParsedOutput's (parsed_output.py); BenchmarkTest calls
:func:`spread_over_nodes` last before run and
:func:`perf_variables_per_group` last before performance, ParsedOutput
:func:`check_groups` in sanity.
"""
from __future__ import annotations

import os

import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from . import fan_out, launch, sku_references


def spread_over_nodes(test) -> None:
    """Last before run: a batch job runs the check once per group."""
    if not test.fanned_out():
        return
    groups = test.fan_groups()
    labels = [fan_out.group_label(group) for group in groups]
    # a path closing the ring names its first node twice
    nodes = list(dict.fromkeys(test.nodes_pinned()))
    ranks = test.num_tasks_per_node or test.num_tasks or 1
    launcher = test.job.launcher
    steps = {label: fan_out.step_launcher(
        launcher.registered_name, test.job.scheduler.registered_name,
        ranks, test.num_cpus_per_task, launcher.options, group)
        for label, group in zip(labels, groups)}
    if None in steps.values():
        test.skip(f'launcher {launcher.registered_name} cannot start '
                  f'one job step per node or pair: run with '
                  f'--node-batch 1')
    rounds = test.round_labels()
    command = ' '.join([test.executable, *test.executable_opts])
    keep = tuple(sn.evaluate(name) for name in (test.stdout, test.stderr))
    commands = {label: test.group_command(index, group)
                for index, (label, group) in enumerate(zip(labels,
                                                           groups))}
    test.prerun_cmds += fan_out.script_lines(
        labels, steps, command, keep, rounds,
        {label: line for label, line in commands.items() if line})
    test.executable, test.executable_opts = 'wait', []
    launch.batch_shell(test.job)
    test.job.pin_nodes = nodes
    test.num_tasks = ranks * len(nodes)
    # a row's check_num_tasks: as the one-node or one-pair job's
    test.step_ranks = ranks * len(groups[0])
    test.num_tasks_per_node = ranks
    test.fanned_groups = labels
    test.keep_files.append(fan_out.FANOUT_DIR)


def check_groups(test) -> None:
    """Sanity of a batch job: each group's output through the check's own
    rules; fails only when no group passed."""
    test.check_job()
    if not test.job_nodes:
        # its first line records the nodes: the script never started
        raise SanityError('the batch job never started')
    failures, missing, passed = {}, {}, []
    for group in test.fanned_groups:
        directory = os.path.join(test.stagedir, fan_out.node_dir(group))
        why = fan_out.unmeasured_reason(
            group, fan_out.read_exit_code(
                os.path.join(directory, fan_out.STEP_EXIT)),
            fan_out.last_line(os.path.join(directory, fan_out.STEP_ERR)))
        if why:
            missing[group] = why
            continue
        try:
            test._on_group(group, test.check_parsed)
        except SanityError as error:
            # as ReFrame words a one-node case's fail_reason
            failures[group] = f'sanity error: {error}'
        else:
            passed.append(group)
    test.group_failures, test.groups_not_measured = failures, missing
    if not passed:
        raise SanityError('nothing passed: ' + '; '.join(
            f'{group}: {why}' for group, why in {**failures,
                                                 **missing}.items()))


def perf_variables_per_group(test) -> None:
    """Last before performance: each perf variable once per group."""
    if not test.fanned_out() or test.measured_nothing():
        return
    target = test.current_partition.fullname
    table = {}
    per_group = {}
    passed = test.passed_groups()
    odd = test.groups_of_another_sku(test.fanned_groups)  # node_probe.py
    lookups = sku_references.lookups_on(test, set(odd.values()))
    for name, function in test.perf_variables.items():
        test.node_metrics[name] = function.unit
        # the nodes that measured nothing get rows too (no value), as
        # their one-node cases would (config/results/rows/builder.py)
        for group in test.fanned_groups:
            var = fan_out.node_var(name, group)
            if group in passed:
                per_group[var] = sn.make_performance_function(
                    test._value_on(group,
                                   lambda f=function: sn.evaluate(f)),
                    function.unit)
            test.metric_groups[var] = group
            copy_facts(test, name, var)
            reference = sku_references.reference_of(test, target, name)
            if group in odd:
                reference = sku_references.reference_on_another_sku(
                    test, lookups[odd[group]], name, var, reference)
            if reference is not None:
                table[var] = reference
    test.perf_variables = per_group
    for label, sku in odd.items():
        test.group_peaks[label], test.group_peak_sources[label] = \
            test.sku_peaks(sku)
    if table:
        tables = sku_references.reference_tables(test)
        tables[target] = {**tables.get(target, {}), **table}
        test.reference = tables


def copy_facts(test, name: str, var: str) -> None:
    """What a row of *var* says about its metric, as for *name*."""
    # (reference_differences stay by metric: check_params holds them
    # whole, as a one-node case's row does)
    for found in test.facts_by_metric():
        if name in found:
            found[var] = found[name]
