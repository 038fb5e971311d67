"""mpi-stage: stage one file from shared storage to every node's local NVMe
with MPI broadcasts (one rank per node), then prove the no-copy path.

The test file is written by the job's last node (srun -w), so rank 0, on
the first node, reads it from shared storage and not from the page cache of
its own write; a single-node run (or one without Slurm) cannot, and is not
judged. The job runs mpi_stage twice: first with --overwrite (a real copy, whatever
the nodes hold), then as a job script would before every job: every node
already holds the file, so it must finish in milliseconds without copying.
mpi_stage writes everything to stderr; each run's goes to its own file.

Launchers: srun, and Open MPI's mpirun/mpiexec (told to place one rank per
node); the local launcher for a single-node run. The post-run commands (the
no-copy run and the cleanup of every node's copy) use the same launch line
and task count as the main run.
"""
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from ..common import launch
from ..common.benchmark import BenchmarkTest
from ..common.scratch import JOB_TAG_COMMAND, job_scratch_dir

FIRST_RUN = 'first.err'
SECOND_RUN = 'second.err'
@rfm.simple_test
class MpiStageCheck(BenchmarkTest):
    lays_out_ranks = True
    descr = 'mpi-stage: shared storage to local NVMe on N nodes, and no-copy'
    parser_tool = 'mpi-stage'
    parsed_stream = FIRST_RUN
    tool_binary = 'mpi_stage'
    tool_hint = ('build it: git clone https://github.com/edwardsp/mpi-stage '
                 '&& cd mpi-stage && make (needs mpicxx, e.g. module load '
                 'mpi/hpcx), then -S tool_binary=/path/to/mpi_stage')
    perf_metrics = {'bandwidth': 'MiB/s', 'copy_time': 's', 'total_time': 's'}
    reference_family = 'mpi_stage'
    tags = {'storage', 'acceptance'}
    expected_runtime_s = 300

    # one rank per node: mpi_stage refuses more
    num_nodes = 2
    tasks_per_node = 1
    #: Size of the test file created on shared storage
    file_size_mib = variable(int, value=1024)
    #: Stage this existing file instead (e.g. a container image); it is
    #: neither created nor removed.
    source_file = variable(str, value='')
    #: The no-copy run must finish within this many seconds.
    no_copy_limit_s = variable(float, value=1.0)
    #: Where the source file was written, so whether rank 0 read it from
    #: the shared file system (filled by the check)
    source_cache = variable(str, value='')
    recorded_variables = ['num_nodes', 'file_size_mib', 'source_file',
                          'source_cache']

    @run_after('setup')
    def set_layout(self):
        self.skip_if(
            self.current_partition.scheduler.registered_name == 'local'
            and self.num_nodes > 1,
            'mpi_stage allows one rank per node and the local partition has '
            'one node (-S num_nodes=1 runs a single-rank copy)')
        self.skip_if(not self.partition_extra('local_nvme'),
                     'the partition declares no local_nvme (extras)')

    def reference_method(self) -> dict:
        # an existing file's size is not known before the run
        return {'file_size_mib': None if self.source_file
                else self.file_size_mib}

    def work_dir(self, base: str) -> str:
        return job_scratch_dir(base, 'clusterproof-mpi-stage', self.hashcode)

    def source_path(self) -> str:
        if self.source_file:
            return self.source_file
        shared = self.partition_extra('shared_fs') or self.stagedir
        return os.path.join(self.work_dir(shared), 'source.bin')

    def source_writer(self) -> str:
        """The command prefix that writes the test file on the job's last
        node: rank 0, on the first, then reads it from the shared file
        system, not from the page cache the write filled. Where that is not
        possible (one node, no Slurm) the file is written where rank 0 runs
        and the run is not judged."""
        scheduler = self.current_partition.scheduler.registered_name
        if self.num_nodes > 1 and scheduler in launch.SLURM_SCHEDULERS:
            self.source_cache = ('written on the last node of the job, read '
                                 'by rank 0 on the first')
            return ('srun --overlap --mpi=none -N1 -n1 -w "$(scontrol show '
                    'hostnames "$SLURM_JOB_NODELIST" | tail -n 1)" ')
        self.source_cache = ('written on the node of rank 0: its read may '
                             'come from the page cache')
        self.no_verdict_reasons = [*self.no_verdict_reasons,
                                   self.source_cache]
        return ''

    def dest_dir(self) -> str:
        return self.work_dir(self.partition_extra('local_nvme'))

    def launch_line(self) -> str:
        """The launcher as the main run gets it: the job's task layout is
        copied first, since ReFrame sets it only when the job starts."""
        launch.add_options(self.job, launch.one_rank_per_node(
            self.job.launcher.registered_name))
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        return ' '.join(self.job.launcher.run_command(self.job).split())

    @run_before('run')
    def write_the_command(self):
        self.supported_launcher()
        self.set_command_line()

    def supported_launcher(self):
        launcher = self.job.launcher.registered_name
        self.skip_if(launch.one_rank_per_node(launcher) is None,
                     f'launcher {launcher} is not supported: mpi-stage needs '
                     'one rank per node (srun, Open MPI mpirun or mpiexec)')

    def set_command_line(self):
        self.prerun_cmds.append(JOB_TAG_COMMAND)
        if self.source_file:
            self.source_cache = 'an existing file: its cache state is the ' \
                                'site\'s'

        source = self.source_path()
        dest = os.path.join(self.dest_dir(), os.path.basename(source))
        stage = [self.tool_binary, '--source', source, '--dest', dest,
                 '--pre-validate', 'size', '--verbose']
        if not self.source_file:
            writer = self.source_writer()
            self.prerun_cmds += [
                f'mkdir -p {os.path.dirname(source)}',
                f'{writer}dd if=/dev/urandom of={source} bs=1M '
                f'count={self.file_size_mib} status=none',
            ]
        # First run: a real copy even where an old copy lies around.
        self.executable_opts = stage[1:] + ['--overwrite', '2>', FIRST_RUN]
        launch = self.launch_line()
        self.postrun_cmds += [
            f'{launch} {" ".join(stage)} 2> {SECOND_RUN}',
            # one rank per node: clean every node's local copy
            f'{launch} rm -rf {self.dest_dir()}',
        ]
        if not self.source_file:
            self.postrun_cmds.append(f'rm -rf {os.path.dirname(source)}')

    def second_run(self):
        return self.parse_file(os.path.join(self.stagedir, SECOND_RUN))

    @sn.deferrable
    def _assert_first_run_copied(self):
        # the parser accepts a no-copy run; with --overwrite it must copy
        if not self.parsed().details.get('copied'):
            raise SanityError('first run did not copy despite --overwrite')
        return True

    @sn.deferrable
    def _assert_no_copy_run(self):
        result = self.second_run()
        if not result.ok:
            raise SanityError(f'second (no-copy) run: {result.reason}')
        if result.details.get('copied'):
            raise SanityError('second run copied again: the nodes did not '
                              'all hold the file after the first run')
        seconds = result.metrics['total_time'].value
        if seconds > self.no_copy_limit_s:
            raise SanityError(
                f'second (no-copy) run took {seconds:.3g} s, more than '
                f'{self.no_copy_limit_s} s: it should take milliseconds')
        return True

    @sanity_function
    def assert_output_ok(self):
        return sn.all([self._assert_parsed_ok(),
                       self._assert_first_run_copied(),
                       self._assert_no_copy_run()])

    @sn.deferrable
    def no_copy_time(self):
        return self.second_run().metrics['total_time'].value

    def derived_perf_variables(self) -> dict:
        return {'no_copy_time': sn.make_performance_function(
            self.no_copy_time(), 's')}
