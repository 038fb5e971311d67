"""What a test's job asks of the scheduler, settled just before submission.

One hook, before run, in this order: the job is watched while it waits
(progress.py prints a line a minute), a job no node of the partition can
hold is skipped (node_fit.py says why), the job gets its wall-clock limit
(time_limit.py) and its launcher the partition's options (launch.py: e.g.
``--mpi=pmix`` where Slurm's MpiDefault is none). The rules are in those
modules; this plugin only applies them to the test.
"""
from __future__ import annotations

import reframe as rfm

from . import launch, node_fit, progress, time_limit


class JobRequest(rfm.RegressionTestPlugin):
    #: What to do instead when the request does not fit (the skip says it).
    oversized_hint = variable(str, value='')

    #: Seconds a healthy run of this check takes (the job's whole script).
    expected_runtime_s = variable(float, int, value=600)

    #: The limit is expected_runtime_s x this + time_limit.START_MARGIN_S.
    time_limit_factor = variable(float, int, value=3.0)

    def expected_seconds(self) -> float:
        """Override where the runtime follows from the problem size."""
        return self.expected_runtime_s

    def fan_rounds(self) -> int:
        """How many runs of the check the job makes one after the other
        (fanned_job.py overrides this for a batch of pairs)."""
        return 1

    # Before the submission: ReFrame runs post-run hooks once the job ended.
    @run_before('run')
    def _settle_the_job_request(self):
        partition = self.current_partition
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
