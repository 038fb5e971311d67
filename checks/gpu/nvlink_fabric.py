"""The NVLink domain of each GB200/GB300 node, and whether its fabric and
IMEX are up (checks/parsers/nvidia_fabric.py reads ``nvidia-smi -q``).

Runs on partitions whose VMs talk over multi-node NVLink
(extras['nccl_multinode_fabric'] == 'mnnvl'), one job per node in
acceptance's node phase, which runs before the set phase: the domains it
records (``nvlink_domain``, ``<ClusterUUID>/<CliqueId>``) decide that
NcclMultiNode runs once per domain expecting MNNVL and once across domains
expecting InfiniBand (scripts/acceptance/nvlink.py).

A GPU whose fabric registration is not Completed/Success, or a node whose
IMEX service is not active, fails with the reason. CycleCloud starts
``nvidia-imex`` for each job in its prolog on GB200/GB300 nodes
(Azure/cyclecloud-slurm azure-slurm-install/imex_prolog.sh, commit
049346f6), so inside the job it must be active.
"""
import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ

from ..common import measurements
from ..common.job_script import JobScript
from ..parsers.nvidia_fabric import node_fabric

IMEX_PREFIX = 'clusterproof-imex: '
IMEX_SERVICE = 'nvidia-imex'


def imex_state(text: str) -> str:
    for line in text.splitlines():
        if line.startswith(IMEX_PREFIX):
            return line[len(IMEX_PREFIX):].strip()
    return ''


@rfm.simple_test
class NvlinkFabric(rfm.RunOnlyRegressionTest, JobScript):
    descr = 'NVLink domain, fabric registration and IMEX of a GB200/GB300 VM'
    valid_systems = ['+gpu']
    valid_prog_environs = ['builtin']
    tags = {'gpu', 'network', 'acceptance'}
    executable = 'nvidia-smi'
    executable_opts = ['-q']
    time_limit = '5m'
    # it records its node and the node's VM size, but samples no health
    health_sampling = False

    #: '<ClusterUUID>/<CliqueId>' shared by every GPU; '' when none.
    nvlink_domain = variable(str, value='')
    #: What is wrong with the fabric or IMEX ([] = healthy).
    fabric_problems = variable(typ.List[str], value=[])

    def measurements(self, logged: dict | None = None) -> dict:
        """What this test measured: ReFrame's perf variable name -> its
        Measurement (checks/common/measurements.py), one row each."""
        return measurements.of_test(measurements.TestFacts(
            **self.node_facts(), perfvalues=dict(self.perfvalues or {}),
            check_params=measurements.recorded_params(self),
            nvlink_domain=self.nvlink_domain or None), logged)

    @run_after('setup')
    def only_on_nvlink_racks(self):
        extras = self.current_partition.extras
        self.skip_if(extras.get('nccl_multinode_fabric') != 'mnnvl',
                     f'{self.current_partition.fullname} has no multi-node '
                     'NVLink')
        self.num_tasks = self.num_tasks_per_node = 1
        # every GPU of the VM: Slurm's cgroups hide those not requested
        self.num_gpus_per_node = extras.get('gpus_per_node', 0)

    @run_before('run')
    def _probe_the_node(self):
        self.probe_around_the_run()

    @run_before('run')
    def ask_imex(self):
        self.postrun_cmds.append(
            f'echo "{IMEX_PREFIX}$(systemctl is-active {IMEX_SERVICE} '
            '2>/dev/null)"')

    @run_after('run')
    def _read_the_probe(self):
        self.read_the_node_probe()

    @run_after('run')
    def read_fabric(self):
        path = os.path.join(self.stagedir, self.stdout.evaluate())
        if not os.path.isfile(path):
            # --dry-run writes the job script only; a real job without
            # output fails its sanity on this problem.
            self.fabric_problems = [f'no job output ({self.stdout.evaluate()})']
            return
        with open(path, errors='replace') as fp:
            text = fp.read()
        fabric = node_fabric(text)
        problems = list(fabric.problems)
        state = imex_state(text)
        if state != 'active':
            problems.append(f'IMEX service {IMEX_SERVICE} is '
                            f'{state or "not found"} (expected active)')
        self.nvlink_domain = fabric.domain or ''
        self.fabric_problems = problems

    @sanity_function
    def fabric_is_healthy(self):
        return sn.assert_false(self.fabric_problems,
                               msg='; '.join(self.fabric_problems))
