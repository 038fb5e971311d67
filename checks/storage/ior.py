"""IOR: shared-filesystem write and read bandwidth."""
import os

import reframe as rfm
import reframe.utility.typecheck as typ

from ..common.benchmark import BenchmarkTest
from ..common.layout import NodeLayout
from ..common.spack import FromSpack, SpackIor


class IorBase(BenchmarkTest, NodeLayout):
    """Write then read a file per process (or one shared file) with POSIX
    or MPI-IO; bandwidth is the *Mean* of IOR's summary rows."""

    parser_tool = 'ior'
    tool_binary = 'ior'
    tool_hint = ('Azure HPC images do not ship it: `spack install ior` '
                 '(then `spack load ior`), or build github.com/hpc/ior '
                 '(./bootstrap && ./configure && make)')
    perf_metrics = {'write_bandwidth_mib': 'MiB/s',
                    'read_bandwidth_mib': 'MiB/s'}
    reference_family = 'ior'
    reference_key = 'ior'

    api = variable(str, value='POSIX')
    block_size = variable(str, value='2M')
    transfer_size = variable(str, value='2M')
    segments = variable(int, value=16)
    file_per_process = variable(bool, value=True)
    #: Stop each phase after this many seconds (IOR -D); 0 = run it all.
    stonewall_seconds = variable(int, value=0)
    #: Directory for the test file: '' = the partition's extras['shared_fs'],
    #: or the stage directory where the partition declares none.
    test_dir = variable(str, value='')
    tasks_per_node = 1
    extra_options = variable(typ.List[str], value=[])
    recorded_variables = ['api', 'block_size', 'transfer_size', 'segments',
                          'file_per_process', 'num_nodes', 'tasks_per_node']

    def test_file(self) -> str:
        base = (self.test_dir or self.partition_extra('shared_fs')
                or self.stagedir)
        return os.path.join(base, f'clusterproof-ior-{self.hashcode}',
                            'test.bin')

    @run_before('run')
    def set_command_line(self):
        directory = os.path.dirname(self.test_file())
        self.prerun_cmds += [f'mkdir -p {directory}']
        self.postrun_cmds += [f'rm -rf {directory}']
        options = ['-a', self.api, '-w', '-r', '-C', '-e', '-g',
                   '-b', self.block_size, '-t', self.transfer_size,
                   '-s', str(self.segments)]
        if self.file_per_process:
            options.append('-F')
        if self.stonewall_seconds:
            options += ['-D', str(self.stonewall_seconds)]
        self.executable_opts = options + self.extra_options + [
            '-o', self.test_file()]


@rfm.simple_test
class IorCheck(IorBase):
    descr = 'IOR write/read bandwidth on the shared filesystem'
    tags = {'storage', 'daily', 'acceptance'}


@rfm.simple_test
class IorSpackCheck(IorBase, FromSpack):
    descr = 'IOR built with Spack (ReFrame Spack build system)'
    tags = {'storage'}
    spack_build = fixture(SpackIor, scope='environment')
