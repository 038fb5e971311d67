"""How many nodes, ranks and threads an MPI check asks for, and how its
ranks are pinned to cores."""
import reframe as rfm
import reframe.utility.typecheck as typ

from . import launch


class NodeLayout(rfm.RegressionTestPlugin):
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

    def ranks_per_node(self) -> int:
        return (self.tasks_per_node or
                self.current_partition.extras.get('cores_per_node', 1))

    @run_after('setup')
    def _set_node_layout(self):
        self.num_tasks_per_node = self.ranks_per_node()
        self.num_tasks = self.num_nodes * self.num_tasks_per_node
        if self.threads_per_task > 1:
            self.num_cpus_per_task = self.threads_per_task

    @run_before('run')
    def _bind_ranks(self):
        if not self.bind_ranks:
            return
        options = launch.binding_options(self.job.launcher.registered_name,
                                         'core', self.threads_per_task)
        launch.add_options(self.job, options)
        self.rank_binding = ' '.join(options) or 'launcher default'
