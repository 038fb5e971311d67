"""What a test's job asks of the scheduler: its nodes, ranks and threads,
its problem size, its wall-clock limit and its launcher's options. The
variables are JobScript's (job_script.py); BenchmarkTest calls these steps:

- after setup: :func:`resolve_size_profile` (a check with a smoke size,
  below) and :func:`lay_out_ranks` (a check that lays out its own ranks:
  num_nodes x tasks_per_node);
- after setup, last: :func:`settle`: the job is watched while it waits
  (progress.py), the ranks are pinned where the check asks, a job no node
  of the partition can hold is skipped (node_fit.py), the job gets its
  time limit (time_limit.py) and its launcher the partition's options
  (launch.py).

Smoke sizes on the embedded default, full sizes on clusters: the README's
first command runs the suite on the ``local`` system, a laptop or a login
node, where a memory-sized HPL would take hours. There a check that sizes
its problem from the node uses a small, quick problem instead; its rows say
so (``size_profile: smoke`` in check_params) and carry no verdict, since a
smoke size is never the method of a SKU's reference. A partition whose
nodes cannot hold a real size (the Slurm sandbox: four fake nodes sharing
one host's cores) says so with ``extras['size_profile']``.
"""
from __future__ import annotations

from reframe.core.logging import getlogger

from . import launch, node_fit, progress, time_limit

SMOKE = 'smoke'
FULL = 'full'
AUTO = 'auto'


def resolve_profile(profile: str, scheduler: str,
                    partition_default: str = '') -> str:
    """'auto' -> the partition's own default where it declares one, else
    smoke on the local scheduler and full on any batch system."""
    if profile not in (AUTO, SMOKE, FULL):
        raise ValueError(f"size_profile must be 'auto', 'smoke' or 'full', "
                         f'got {profile!r}')
    if profile != AUTO:
        return profile
    if partition_default:
        return resolve_profile(partition_default, scheduler)
    return SMOKE if scheduler == 'local' else FULL


def resolve_size_profile(test) -> None:
    if not test.has_smoke_size:
        return
    test.size_profile = resolve_profile(
        test.size_profile,
        test.current_partition.scheduler.registered_name,
        test.current_partition.extras.get('size_profile', ''))
    if test.is_smoke():
        test.no_verdict_reasons = [*test.no_verdict_reasons,
                                   'smoke size']


def lay_out_ranks(test) -> None:
    if not test.lays_out_ranks:
        return
    test.num_tasks_per_node = test.ranks_per_node()
    test.num_tasks = test.num_nodes * test.num_tasks_per_node
    if test.threads_per_task > 1:
        test.num_cpus_per_task = test.threads_per_task


def settle(test) -> None:
    """Once the check has sized its run, before it writes its command (and
    before the submission: post-run hooks run once the job ended)."""
    partition = test.current_partition
    if test.is_smoke():
        # only for tests that run (not those skipped for a missing tool)
        getlogger().info(
            f'{test.name}: smoke size on {partition.fullname}'
            ' (quick problem, recorded without a verdict; '
            '-S size_profile=full for the real size)')
    if test.lays_out_ranks and test.bind_ranks:
        options = launch.binding_options(
            test.job.launcher.registered_name, 'core',
            test.threads_per_task)
        launch.add_options(test.job, options)
        test.rank_binding = ' '.join(options) or 'launcher default'
    if test.job is not None:
        progress.WATCH.add(f'{test.name} on {partition.fullname}',
                           test.job)
    if partition.scheduler.registered_name != 'local':
        node_cpus, source = node_fit.declared_node_cpus(partition)
        reason = node_fit.unsatisfiable_reason(
            test.name, partition.fullname, node_cpus, source,
            test.num_tasks_per_node, test.num_cpus_per_task,
            test.oversized_hint)
        test.skip_if(reason is not None, reason)
    # None = neither the user (-S time_limit=...) nor the check chose
    # one; a partition's configured time_limit is the site's choice.
    if test.time_limit is None and not partition.time_limit:
        # a batch of ring pairs runs its pairs in rounds, one after
        # the other (fan_out_results.py): each round as long as one run
        test.time_limit = time_limit.limit_seconds(
            test.expected_seconds() * test.fan_rounds(),
            test.time_limit_factor)
    launch.add_options(test.job,
                       partition.extras.get('launcher_options', []))
