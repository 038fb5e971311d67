"""What a test's job asks of the scheduler: its nodes, ranks and threads,
its problem size, its wall-clock limit and its launcher's options.

BenchmarkTest (benchmark.py) calls these steps at its stages:

- after setup: :meth:`JobRequest.resolve_size_profile` (a check with a
  smoke size, below) and :meth:`JobRequest.lay_out_ranks` (a
  check that lays out its own ranks: num_nodes x tasks_per_node);
- before run: :meth:`JobRequest.settle_the_job_request`: the job is
  watched while it waits (progress.py), the ranks are pinned where the
  check asks, a job no node of the partition can hold is skipped
  (node_fit.py), the job gets its time limit (time_limit.py) and its
  launcher the partition's options (launch.py).

The rules are in those modules; this plugin only applies them to the test.

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

import reframe as rfm
import reframe.utility.typecheck as typ
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


class JobRequest(rfm.RegressionTestPlugin):
    #: What to do instead when the request does not fit (the skip says it).
    oversized_hint = variable(str, value='')

    #: Seconds a healthy run of this check takes (the job's whole script).
    expected_runtime_s = variable(float, int, value=600)

    #: The limit is expected_runtime_s x this + time_limit.START_MARGIN_S.
    time_limit_factor = variable(float, int, value=3.0)

    #: True for an MPI check that asks for num_nodes x tasks_per_node
    #: ranks (lay_out_ranks); False: the check sets num_tasks itself.
    lays_out_ranks = variable(typ.Bool, value=False)
    num_nodes = variable(int, value=1)
    #: MPI ranks per node; 0 = one per core (the partition's cores_per_node)
    tasks_per_node = variable(int, value=0)
    #: CPUs (OpenMP threads) per rank
    threads_per_task = variable(int, value=1)
    #: Pin every rank to its core(s) through the launcher (compute-bound
    #: checks such as HPL set this; a floating rank loses whole iterations).
    bind_ranks = variable(typ.Bool, value=False)
    #: The launcher options that did the pinning (recorded with the result)
    rank_binding = variable(str, value='')

    #: True for a check that sizes its problem from the node and so has a
    #: quick smoke size for the local system (below).
    has_smoke_size = variable(typ.Bool, value=False)
    #: 'auto' (smoke on the local system, full elsewhere), 'smoke' or 'full'
    size_profile = variable(str, value=AUTO)

    def expected_seconds(self) -> float:
        """Override where the runtime follows from the problem size."""
        return self.expected_runtime_s

    def fan_rounds(self) -> int:
        """How many runs of the check the job makes one after the other
        (fanned_job.py overrides this for a batch of pairs)."""
        return 1

    def ranks_per_node(self) -> int:
        return (self.tasks_per_node or
                self.current_partition.extras.get('cores_per_node', 1))

    def is_smoke(self) -> bool:
        return self.has_smoke_size and self.size_profile == SMOKE

    def resolve_size_profile(self) -> None:
        if not self.has_smoke_size:
            return
        self.size_profile = resolve_profile(
            self.size_profile,
            self.current_partition.scheduler.registered_name,
            self.current_partition.extras.get('size_profile', ''))
        if self.is_smoke():
            self.no_verdict_reasons = [*self.no_verdict_reasons,
                                       'smoke size']

    def lay_out_ranks(self) -> None:
        if not self.lays_out_ranks:
            return
        self.num_tasks_per_node = self.ranks_per_node()
        self.num_tasks = self.num_nodes * self.num_tasks_per_node
        if self.threads_per_task > 1:
            self.num_cpus_per_task = self.threads_per_task

    # Before the submission: ReFrame runs post-run hooks once the job ended.
    def settle_the_job_request(self) -> None:
        partition = self.current_partition
        if self.is_smoke():
            # only for tests that run (not those skipped for a missing tool)
            getlogger().info(
                f'{self.name}: smoke size on {partition.fullname}'
                ' (quick problem, recorded without a verdict; '
                '-S size_profile=full for the real size)')
        if self.lays_out_ranks and self.bind_ranks:
            options = launch.binding_options(
                self.job.launcher.registered_name, 'core',
                self.threads_per_task)
            launch.add_options(self.job, options)
            self.rank_binding = ' '.join(options) or 'launcher default'
        if self.job is not None:
            progress.WATCH.add(f'{self.name} on {partition.fullname}',
                               self.job)
        if partition.scheduler.registered_name != 'local':
            node_cpus, source = node_fit.declared_node_cpus(partition)
            reason = node_fit.unsatisfiable_reason(
                self.name, partition.fullname, node_cpus, source,
                self.num_tasks_per_node, self.num_cpus_per_task,
                self.oversized_hint)
            self.skip_if(reason is not None, reason)
        # None = neither the user (-S time_limit=...) nor the check chose
        # one; a partition's configured time_limit is the site's choice.
        if self.time_limit is None and not partition.time_limit:
            # a batch of ring pairs runs its pairs in rounds, one after
            # the other (fanned_job.py): each round as long as one run
            self.time_limit = time_limit.limit_seconds(
                self.expected_seconds() * self.fan_rounds(),
                self.time_limit_factor)
        launch.add_options(self.job,
                           partition.extras.get('launcher_options', []))
