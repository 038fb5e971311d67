"""IOR: shared-filesystem write and read bandwidth.

What IOR measures is easily the page cache rather than the filesystem: a
task that reads back the file it has just written reads memory. So by
default every node's tasks read what another node wrote (``-C``, two nodes
or more), every file is fsync'ed before the write phase ends (``-e``), and
each node writes more than its memory could cache (sized from the
partition's ``memory_gib``), with the write phase cut at
``stonewall_seconds`` (``-D``, as in the ReFrame + Log Analytics post) and
the read phase reading back what was written (``-O stoneWallingWearOut=1``).
O_DIRECT (``-S direct_io=true``) is the other way to defeat the cache on
one node. A run whose read may come from the page cache (one node, no
O_DIRECT) is recorded without a verdict. On the local system it is a quick
smoke run.

The number is the file system's, so the file system is part of the run's
reference key (``file_system``: its type and mount point as the job saw
them, ``findmnt -T``): two file systems never share a published reference
or a site baseline. Where findmnt cannot tell (a chroot or container whose
mount table does not hold the directory), the type comes from ``stat -f``
and the mount point from the longest one in ``/proc/self/mountinfo`` that
holds the directory, else ``unknown``: the key then reads e.g.
``file_system=ext2/ext3:unknown``, which matches only runs that could not
tell either, never a reference measured on a named mount.
"""
import math
import os

import reframe as rfm
import reframe.utility.typecheck as typ

from ..common.benchmark import BenchmarkTest
from ..common.scratch import JOB_TAG_COMMAND, job_scratch_dir
from ..common.spack import FromSpack, SpackIor

MIB = 2 ** 20
_UNITS = {'': 1, 'k': 2 ** 10, 'm': MIB, 'g': 2 ** 30, 't': 2 ** 40}
#: Tasks per node by default (no more than the node's cores)
DEFAULT_TASKS_PER_NODE = 8
#: Each node writes this many times its memory (before stonewalling)
MEMORY_MULTIPLE = 1.5
SMOKE_SEGMENTS = 16
#: Where the job writes what findmnt says of the test directory
FILE_SYSTEM_FILE = 'clusterproof_ior_file_system.txt'
#: Characters the reference key uses as separators
_KEY_SEPARATORS = str.maketrans({',': '_', '|': '_', '=': '_'})


def size_bytes(text: str) -> int:
    """IOR's size syntax: '2M' -> 2097152 (k, m, g, t are powers of 2)."""
    number, unit = text[:-1], text[-1:].lower()
    if unit.isdigit():
        number, unit = text, ''
    if unit not in _UNITS or not number.isdigit():
        raise ValueError(f'not an IOR size: {text!r}')
    return int(number) * _UNITS[unit]


def segments_beyond_memory(memory_gib: float, tasks_per_node: int,
                           block_size: str) -> int:
    """Segments per task so that a node's tasks write MEMORY_MULTIPLE
    times its memory."""
    per_task = MEMORY_MULTIPLE * memory_gib * 2 ** 30 / tasks_per_node
    return max(1, math.ceil(per_task / size_bytes(block_size)))


#: awk over /proc/self/mountinfo (field 5: the mount point): the longest
#: mount point holding the directory in ``d`` (with a trailing slash)
_MOUNT_POINT_AWK = (
    '{m = $5; if (m != "/") m = m "/"; '
    'if (index(d, m) == 1 && length(m) > length(best)) best = m} '
    'END {if (best == "") print "unknown"; else if (best == "/") print best; '
    'else print substr(best, 1, length(best) - 1)}')


def file_system_command(directory: str) -> str:
    """Shell that writes '<type> <mount point>' of *directory* to
    FILE_SYSTEM_FILE: findmnt's answer, else stat -f's type and
    mountinfo's mount point, else 'unknown' for either; never fails."""
    quoted = f'"{directory}"'
    mount_point = (f"awk -v d=\"$(realpath -m {quoted})/\" "
                   f"'{_MOUNT_POINT_AWK}' /proc/self/mountinfo "
                   f"2>/dev/null || echo unknown")
    fallback = (f'echo "$(stat -f -c %T {quoted} 2>/dev/null || '
                f'echo unknown) $({mount_point})"')
    return (f'{{ findmnt -n -o FSTYPE,TARGET -T {quoted} 2>/dev/null '
            f'| grep . || {fallback}; }} > {FILE_SYSTEM_FILE} || true')


def file_system_of(findmnt_output: str) -> str:
    """``findmnt -n -o FSTYPE,TARGET -T DIR`` (or the fallback's
    '<type> unknown') -> 'lustre:/lustre' ('' when it said nothing
    usable)."""
    for line in findmnt_output.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and (parts[1].strip().startswith('/')
                                or parts[1].strip() == 'unknown'):
            fstype, target = parts[0], parts[1].strip()
            return f'{fstype}:{target}'.translate(_KEY_SEPARATORS)
    return ''


def cache_defeat(num_nodes: int, direct_io: bool) -> str:
    """How the run keeps the page cache out of the read ('' = it does not)."""
    if direct_io:
        return 'O_DIRECT'
    if num_nodes > 1:
        return 'reads of another node\'s data (-C), fsync (-e)'
    return ''


class IorBase(BenchmarkTest):
    """Write then read a file per process (or one shared file) with POSIX
    or MPI-IO; bandwidth is the *Mean* of IOR's summary rows."""

    lays_out_ranks = True
    has_smoke_size = True
    parser_tool = 'ior'
    tool_binary = 'ior'
    tool_hint = ('Azure HPC images do not ship it: `spack install ior` '
                 '(then `spack load ior`), or build github.com/hpc/ior '
                 '(./bootstrap && ./configure && make)')
    perf_metrics = {'write_bandwidth_mib': 'MiB/s',
                    'read_bandwidth_mib': 'MiB/s'}
    reference_family = 'ior'

    api = variable(str, value='POSIX')
    block_size = variable(str, value='2M')
    transfer_size = variable(str, value='2M')
    #: Segments per task; 0 = enough to write MEMORY_MULTIPLE x the node's
    #: memory (SMOKE_SEGMENTS on the local system or without memory_gib)
    segments = variable(int, value=0)
    file_per_process = variable(typ.Bool, value=True)
    #: Open files with O_DIRECT (POSIX API; IOR 3.3 or later)
    direct_io = variable(typ.Bool, value=False)
    #: Stop each phase after this many seconds (IOR -D); 0 = run it all.
    stonewall_seconds = variable(int, value=300)
    #: Directory for the test files: '' = the partition's extras['shared_fs'],
    #: or the stage directory where the partition declares none.
    test_dir = variable(str, value='')
    num_nodes = 2
    extra_options = variable(typ.List[str], value=[])
    #: How the page cache is kept out (filled by the check)
    page_cache_defeat = variable(str, value='')
    #: MiB each phase moved (write, read), from IOR's summary (filled by
    #: the check): with a stonewall, what was written, not what was asked
    data_moved_mib = variable(typ.Dict[str, float], value={})
    #: The file system of the test files, as the job saw it ('nfs:/shared';
    #: filled from the job's findmnt; '' before the run or in a dry run)
    file_system = variable(str, value='')
    recorded_variables = ['api', 'block_size', 'transfer_size', 'segments',
                          'file_per_process', 'direct_io',
                          'stonewall_seconds', 'num_nodes', 'tasks_per_node',
                          'page_cache_defeat', 'data_moved_mib',
                          'size_profile', 'file_system']

    def ranks_per_node(self) -> int:
        cores = self.partition_extra('cores_per_node', 1)
        return self.tasks_per_node or min(DEFAULT_TASKS_PER_NODE, cores)

    @run_after('setup')
    def size_the_run(self):
        if self.is_smoke():
            self.num_nodes = 1
            self.num_tasks = self.num_tasks_per_node = 1
            self.stonewall_seconds = 0
        memory_gib = self.partition_extra('memory_gib')
        if not self.segments:
            self.segments = (
                SMOKE_SEGMENTS if self.is_smoke() or not memory_gib else
                segments_beyond_memory(memory_gib, self.num_tasks_per_node,
                                       self.block_size))
        self.page_cache_defeat = cache_defeat(self.num_nodes, self.direct_io)
        if not self.page_cache_defeat:
            self.no_verdict_reasons = [
                *self.no_verdict_reasons,
                'one node without O_DIRECT: the read may come from the page '
                'cache']

    def reference_method(self) -> dict:
        return {'api': self.api, 'block_size': self.block_size,
                'transfer_size': self.transfer_size,
                'segments': self.segments,
                'file_per_process': self.file_per_process,
                'direct_io': self.direct_io,
                'tasks_per_node': self.num_tasks_per_node,
                'file_system': self.recorded_file_system()}

    def recorded_file_system(self) -> str:
        if not self.file_system and self.stagedir:
            try:
                with open(os.path.join(self.stagedir,
                                       FILE_SYSTEM_FILE)) as fp:
                    self.file_system = file_system_of(fp.read(4096))
            except OSError:
                pass
        return self.file_system

    @run_after('sanity')
    def record_data_moved(self):
        """What each phase really moved (MiB), from IOR's own summary: the
        stonewall (-D) cuts the write short of MEMORY_MULTIPLE x memory
        when the filesystem is slow."""
        self.data_moved_mib = dict(self.parsed().details.get('data_mib', {}))

    def expected_seconds(self) -> float:
        if self.stonewall_seconds:
            return 2 * self.stonewall_seconds + 120
        return 600

    def scratch_dir(self) -> str:
        base = (self.test_dir or self.partition_extra('shared_fs')
                or self.stagedir)
        return job_scratch_dir(base, 'clusterproof-ior', self.hashcode)

    @run_before('run')
    def set_command_line(self):
        directory = self.scratch_dir()
        self.prerun_cmds += [
            JOB_TAG_COMMAND, f'mkdir -p "{directory}"',
            file_system_command(directory)]
        self.postrun_cmds += [f'rm -rf "{directory}"']
        options = ['-a', self.api, '-w', '-r', '-C', '-e', '-g',
                   '-b', self.block_size, '-t', self.transfer_size,
                   '-s', str(self.segments)]
        if self.file_per_process:
            options.append('-F')
        if self.direct_io:
            options.append('--posix.odirect')
        if self.stonewall_seconds:
            # Wear-out: every task writes as many blocks as the fastest did
            # by the deadline, and the read phase reads exactly those back
            # (as IO500's ior-easy runs it).
            options += ['-D', str(self.stonewall_seconds),
                        '-O', 'stoneWallingWearOut=1']
        self.executable_opts = options + self.extra_options + [
            '-o', f'{directory}/test.bin']


@rfm.simple_test
class IorCheck(IorBase):
    descr = 'IOR write/read bandwidth on the shared filesystem'
    tags = {'storage', 'daily', 'acceptance'}


@rfm.simple_test
class IorSpackCheck(FromSpack, IorBase):
    descr = 'IOR built with Spack (ReFrame Spack build system)'
    tags = {'storage', 'spack'}
    spack_build = fixture(SpackIor, scope='environment')
