"""How many nodes, ranks and threads an MPI check asks for."""
import reframe as rfm


class NodeLayout(rfm.RegressionTestPlugin):
    num_nodes = variable(int, value=1)
    #: MPI ranks per node; 0 = one per core (the partition's cores_per_node)
    tasks_per_node = variable(int, value=0)
    #: CPUs (OpenMP threads) per rank
    threads_per_task = variable(int, value=1)

    def ranks_per_node(self) -> int:
        return (self.tasks_per_node or
                self.current_partition.extras.get('cores_per_node', 1))

    @run_after('setup')
    def _set_node_layout(self):
        self.num_tasks_per_node = self.ranks_per_node()
        self.num_tasks = self.num_nodes * self.num_tasks_per_node
        if self.threads_per_task > 1:
            self.num_cpus_per_task = self.threads_per_task
