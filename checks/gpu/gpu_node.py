"""Every GPU of an ND node accounted for, one job per node (acceptance's
node phase pins each): GpuInventory, GpuNvlink and GpuDiag (DCGM's active
diagnostics, GpuDiagDaily in the daily tier).

Each job asks ``nvidia-smi -q`` under ``timeout`` first, so that every row
and finding names its GPU by index, PCI bus id and serial
(checks/health/gpu_node.py judges, checks/references/health.yaml says what
the SKU should show). What is wrong with a GPU is a health finding of the
node, as the health sampler's are (``health_findings``, which acceptance
reads): the GPU is named, and the drain reason carries it. The job's perf
variables count GPUs and findings, so that every row is stored whatever
the findings say (a failed sanity stores none); GpuDiag's internal errors
of the test (reference 0) fail the node's test without naming a GPU. A GPU
that hangs is a finding (``timeout``), never a hung job.

No DCGM on the node: GpuDiag is not measured (the job stops with exit 127
and says how to install it), never a pass; nor is a run whose every test
plugin was skipped, or a dcgmi without a host engine (the test skips,
saying why).
"""
import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ

from ..common import measurements
from ..common.job_script import JobScript
from ..health import assessment, gpu_node, rules
from ..parsers import dcgmi, nvidia_smi

#: The marker before each GPU's answer (nvidia_smi.MARK reads it).
MARK = '##clusterproof-gpu'
IDS_FILE = 'clusterproof_gpus.txt'
DCGM_HINT = ('install DCGM (the datacenter-gpu-manager-4 package, '
             'https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/'
             'getting-started.html) and start nv-hostengine')


def ask_each_gpu(count: int, seconds: int) -> str:
    """Shell lines: ``nvidia-smi -q -i N`` of each GPU under a time limit,
    each answer after a marker line with its exit status."""
    return (f'for i in $(seq 0 {count - 1}); do '
            f'out=$(timeout {seconds} nvidia-smi -q -i "$i" 2>&1); '
            f'echo "{MARK} $i exit $?"; printf "%s\\n" "$out"; done')


def identities_command(seconds: int) -> str:
    return f'timeout {seconds} nvidia-smi -q > {IDS_FILE} 2>&1 || true'


class GpuNodeCheck(rfm.RunOnlyRegressionTest, JobScript):
    """One job on one GPU node; its findings per GPU (not a test). The
    health sampler runs around it as around every check (its ``nvidia-smi
    nvlink -e`` counters before and after the job give the deltas), and
    this check's own findings join the sampler's ``health_findings``."""
    valid_systems = ['+gpu']
    valid_prog_environs = ['builtin']
    time_limit = '10m'

    #: Seconds nvidia-smi may take to answer for one GPU before the GPU
    #: counts as hung.
    answer_limit_s = variable(int, value=60)

    #: GPU findings of this check that fail the node.
    gpu_findings = variable(int, value=0, loggable=False)

    @run_after('setup')
    def _one_task_every_gpu(self):
        self.num_tasks = self.num_tasks_per_node = 1
        # every GPU of the VM: Slurm's cgroups hide those not requested
        self.num_gpus_per_node = self.current_partition.extras.get(
            'gpus_per_node', 0)

    @run_before('run')
    def _probe_the_nodes(self):
        self.probe_around_the_run()

    @run_after('run')
    def _read_the_probe(self):
        self.read_the_node_probe()

    def measurements(self, logged: dict | None = None) -> dict:
        """What this test measured: ReFrame's perf variable name -> its
        Measurement (checks/common/measurements.py), one row each."""
        return measurements.of_test(measurements.TestFacts(
            **self.node_facts(), perfvalues=dict(self.perfvalues or {}),
            check_params=measurements.recorded_params(self)),
            logged)

    def expected_gpus(self) -> gpu_node.Expected:
        extras = self.current_partition.extras
        return gpu_node.expected(extras.get('vm_sku'),
                                 extras.get('gpus_per_node'))

    def node_name(self) -> str:
        nodes = list(self.job_nodes) or list(self.pinned_nodes)
        return nodes[0] if nodes else (self.current_partition.fullname)

    def read_stage(self, name: str) -> str | None:
        path = os.path.join(self.stagedir, name)
        if not os.path.isfile(path):
            return None
        with open(path, errors='replace') as fp:
            return fp.read()

    def keep(self, result: assessment.Assessment) -> None:
        """This check's findings and rows beside the sampler's."""
        failing = [f for f in result.findings if f.severity == assessment.FAIL]
        self.health_findings = list(self.health_findings) + [
            f.as_dict() for f in result.findings]
        self.health_rows = list(self.health_rows) + [
            dict(row.__dict__) for row in result.rows]
        if failing:
            node = self.node_name()
            notes = dict(self.health_notes)
            notes[node] = '; '.join(filter(None, [notes.get(node)] + [
                f.reason for f in failing]))
            self.health_notes = notes
        self.gpu_findings = len(failing)

    def more_performance(self) -> dict:
        """{perf variable: (value, unit, reference tuple or None)} a check
        adds to its count of findings."""
        return {}

    @run_before('performance')
    def _count_findings(self):
        # a count without a reference: the findings judge (acceptance reads
        # them, each naming its GPU), as the health sampler's do
        measured = {'gpu_findings': (self.gpu_findings, 'findings', None),
                    **self.more_performance()}
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(value), unit)
            for name, (value, unit, _) in measured.items()}
        self.reference = {'*': {name: ref for name, (_, _, ref)
                                in measured.items() if ref}}


@rfm.simple_test
class GpuInventory(GpuNodeCheck):
    descr = ('Every GPU answers nvidia-smi in time, at the bus id and count '
             "of the SKU, in its persistence and ECC modes")
    tags = {'gpu', 'health', 'daily', 'acceptance'}
    executable = 'sh'

    @run_before('run')
    def _ask_every_gpu(self):
        count = self.expected_gpus().count or 1
        self.executable_opts = ['-c', shlex.quote(
            ask_each_gpu(count, self.answer_limit_s))]

    @run_before('sanity')
    def _judge(self):
        text = self.read_stage(self.stdout.evaluate())
        if text is None:
            return      # --dry-run, or no output: sanity says so
        self.keep(gpu_node.inventory(self.node_name(), text,
                                     self.expected_gpus(), rules.load(),
                                     self.answer_limit_s))

    @sanity_function
    def every_gpu_asked(self):
        return sn.assert_found(rf'^{MARK} 0 exit', self.stdout,
                               msg='no GPU answer in the job output')

    def more_performance(self) -> dict:
        # the GPUs that answered, shown against the SKU's count (the
        # findings name the missing one)
        found = len(nvidia_smi.gpu_sections(
            self.read_stage(self.stdout.evaluate()) or '')[0])
        return {'gpus_found': (found, 'GPUs', None)}


@rfm.simple_test
class GpuNvlink(GpuNodeCheck):
    descr = "Each GPU's NVLinks up, at the SKU's count and speed"
    tags = {'gpu', 'health', 'network', 'daily', 'acceptance'}
    executable = 'timeout'

    @run_before('run')
    def _ask_links(self):
        self.executable_opts = [str(self.answer_limit_s), 'nvidia-smi',
                                'nvlink', '-s']
        self.prerun_cmds.append(identities_command(self.answer_limit_s))
        self.keep_files.append(IDS_FILE)

    @run_before('sanity')
    def _judge(self):
        text = self.read_stage(self.stdout.evaluate())
        if text is None:
            return
        self.keep(gpu_node.nvlinks(
            self.node_name(), text, self.read_stage(IDS_FILE) or '',
            rules.load(), rules.nominal(
                self.current_partition.extras.get('vm_sku'))))

    @sanity_function
    def links_listed(self):
        return sn.assert_found(r'^GPU \d+:', self.stdout,
                               msg='nvidia-smi nvlink -s listed no GPU')


@rfm.simple_test
class GpuDiag(GpuNodeCheck):
    descr = 'DCGM active diagnostics (dcgmi diag -j): a result per plugin ' \
            'and GPU'
    tags = {'gpu', 'health', 'acceptance'}
    tool_binary = 'dcgmi'
    tool_hint = DCGM_HINT
    #: dcgmi diag's run level: 3 (about 15 minutes) in acceptance, 2 (about
    #: 2 minutes) in the daily tier (GpuDiagDaily).
    level = variable(int, value=3)
    time_limit = '40m'

    #: Internal errors of the test and plugins skipped on every GPU (the
    #: node's test, no GPU named).
    diag_internal = variable(typ.List[str], value=[])
    diag_skipped = variable(typ.List[str], value=[])

    @run_after('setup')
    def _find_dcgmi(self):
        self.locate_tool()

    @run_before('run')
    def _diagnose(self):
        self.executable_opts = ['diag', '-r', str(self.level), '-j']
        self.prerun_cmds.append(identities_command(self.answer_limit_s))
        self.keep_files.append(IDS_FILE)

    def parsed(self):
        return dcgmi.parse(self.read_stage(self.stdout.evaluate()) or '')

    @run_before('sanity')
    def _judge(self):
        text = self.read_stage(self.stdout.evaluate())
        if text is None:
            return
        parsed = self.parsed()
        # nothing measured: a skip (acceptance: not measured), never a pass
        why = gpu_node.diag_not_measured(
            parsed, text + (self.read_stage(self.stderr.evaluate()) or ''),
            DCGM_HINT)
        if why:
            self.skip(why)
        if not parsed.details.get('results'):
            return
        result, internal, skipped = gpu_node.diagnostics(
            self.node_name(), parsed, self.read_stage(IDS_FILE) or '',
            rules.load())
        self.diag_internal, self.diag_skipped = internal, skipped
        self.keep(result)

    @sanity_function
    def diagnosed(self):
        parsed = self.parsed()
        return sn.assert_true(parsed.details.get('results'),
                              msg=f'dcgmi diag: {parsed.reason}')

    def more_performance(self) -> dict:
        # an internal error of the test fails the node's test, naming no
        # GPU (reference 0)
        return {'internal_errors': (len(self.diag_internal), 'plugins',
                                    (0, None, 0, 'plugins')),
                'plugins_skipped': (len(self.diag_skipped), 'plugins',
                                    None)}


@rfm.simple_test
class GpuDiagDaily(GpuDiag):
    descr = 'DCGM active diagnostics, level 2 (dcgmi diag -r 2 -j)'
    tags = {'gpu', 'health', 'daily'}
    level = 2
    time_limit = '15m'
