"""What a job asks of the scheduler and what it records about its nodes:
the plugin that writes the job script around a check's command.

Its variables say what the job is (the tool, the nodes, ranks and threads,
the problem size, the time limit; the nodes it got and what the probe found
there). Its steps, called by BenchmarkTest's hooks (benchmark.py), live in
the modules that hold their rules:

- job_request.py: the size profile, the rank layout, and the request
  settled before submission (binding, fit, time limit, launcher options);
- external_tool.py: where the tool comes from, and the job's guard for it;
- node_probe.py: the nodes recorded and probed before and after the run,
  and what the probe found, read once after it.

A check that is no BenchmarkTest (checks/gpu/gpu_node.py) calls the node
probe's steps from hooks of its own.
"""
from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ

from . import external_tool, job_request, node_probe


class JobScript(rfm.RegressionTestPlugin):
    # The request (job_request.py)
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
    #: quick smoke size for the local system (job_request.py).
    has_smoke_size = variable(typ.Bool, value=False)

    #: 'auto' (smoke on the local system, full elsewhere), 'smoke' or 'full'
    size_profile = variable(str, value=job_request.AUTO)

    # The tool (external_tool.py)
    #: Name on PATH or absolute path; override with ``-S tool_binary=...``.
    tool_binary = variable(str)

    #: How to get the tool (image path or module, Spack spec, package).
    tool_hint = variable(str, value='')

    #: Set to False for tests whose executable is a wrapper script that
    #: starts the tool itself.
    tool_is_executable = variable(bool, value=True)

    #: True where the job script itself makes the tool available (e.g. it
    #: loads a Spack build): then only the job can tell whether it is there.
    tool_loaded_by_job = variable(bool, value=False)

    # The nodes (node_probe.py)
    #: Run on exactly these nodes (Slurm --nodelist); empty = anywhere.
    pinned_nodes = variable(typ.List[str], value=[])

    #: The nodes the job ran on, as its script recorded them.
    job_nodes = variable(typ.List[str], value=[])

    #: What IMDS said the job's (first) node is, or, in a batch job that
    #: measures each node on its own, the size the batch is judged as;
    #: '' = no answer.
    vm_sku_observed = variable(str, value='')

    #: Set when a node of a job that measures its nodes together differs
    #: from the partition's declared SKU.
    vm_sku_mismatch = variable(str, value='')

    #: Node -> what IMDS said it is, for every node that answered.
    node_vm_skus = variable(typ.Dict[str, str], value={})

    #: Node -> why it is not the partition's declared SKU (every node of
    #: the job that differs).
    vm_sku_mismatches = variable(typ.Dict[str, str], value={})

    #: Sample IB and GPU health before and after the run (-S
    #: health_sampling=false turns it off).
    health_sampling = variable(bool, value=True)

    #: Where the compute nodes' sysfs is; %n is the node's name. Empty: the
    #: partition's extras 'health_sysfs_root', else /sys.
    health_sysfs_root = variable(str, value='')

    #: The health findings of this run, per node (also in the run report,
    #: where acceptance reads them).
    health_findings = variable(typ.List[typ.Dict[str, object]], value=[])

    #: The rows the samples add (config/results/rows/builder.py stores them).
    health_rows = variable(typ.List[typ.Dict[str, object]], value=[],
                           loggable=False)

    #: Node -> what its health findings say, for the verdict of a failing
    #: value measured there.
    health_notes = variable(typ.Dict[str, str], value={}, loggable=False)

    #: Node -> fingerprint columns.
    node_fingerprints = variable(typ.Dict[str, typ.Dict[str, object]],
                                 value={}, loggable=False)

    #: Node -> {'before': Dump, 'after': Dump, 'kvp': bytes}: the probe's
    #: files as read once after the run (health_sampling.samples_of), for
    #: a check that reads more of them (per_gpu.py: the GPUs' names).
    node_samples = variable(dict, value={}, loggable=False)

    # What a check may override
    def expected_seconds(self) -> float:
        """Override where the runtime follows from the problem size."""
        return self.expected_runtime_s

    def fan_rounds(self) -> int:
        """How many runs of the check the job makes one after the other
        (ParsedOutput answers for a batch of pairs)."""
        return 1

    def ranks_per_node(self) -> int:
        return (self.tasks_per_node or
                self.current_partition.extras.get('cores_per_node', 1))

    def tool_setup_commands(self) -> list[str]:
        """Shell lines that make the tool available in the job (spack.py:
        a Spack build's load); only the job can then tell whether the tool
        is there."""
        return []

    def measures_each_node_alone(self) -> bool:
        """True where a batch job measures each node on its own
        (ParsedOutput says so); each node is then judged by its own size."""
        return False

    def judge_without_verdict(self, reason: str) -> None:
        """A node of the job is not the partition's SKU: a check judged
        against references shows its values without a verdict
        (BenchmarkTest); nothing to do for one without."""

    def nccl_version(self) -> str | None:
        """The NCCL version the run used, for the fingerprint; None for a
        check that runs no NCCL (checks/gpu/nccl.py says)."""
        return None

    # Facts
    def is_smoke(self) -> bool:
        return self.has_smoke_size and self.size_profile == job_request.SMOKE

    def node_facts(self) -> dict:
        return node_probe.node_facts(self)

    def groups_of_another_sku(self, labels) -> dict[str, str]:
        return node_probe.groups_of_another_sku(self, labels)

    # Steps, in the order BenchmarkTest calls them
    def resolve_size_profile(self) -> None:
        job_request.resolve_size_profile(self)

    def lay_out_ranks(self) -> None:
        job_request.lay_out_ranks(self)

    def locate_tool(self) -> None:
        external_tool.locate(self)

    def settle_the_job_request(self) -> None:
        job_request.settle(self)

    def probe_around_the_run(self) -> None:
        node_probe.probe_around_the_run(self)

    def read_the_node_probe(self) -> None:
        node_probe.read_the_node_probe(self)
