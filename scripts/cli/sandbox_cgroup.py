"""Whether slurmd can start here: it needs a cgroup file system at
/sys/fs/cgroup, even with proctrack/linuxproc and task/none.

slurmd (22.05 and later) detects the cgroup version at start from the file
system type of /sys/fs/cgroup and exits with "No filesystem mounted on
/sys/fs/cgroup" when that directory is bare sysfs (SchedMD/slurm,
src/interfaces/cgroup.c, autodetect_cgroup_version): cgroup2 there means v2;
tmpfs means v1 when /sys/fs/cgroup/systemd holds a cgroup (v1 or v2) file
system. Containers started without the host's cgroups lack it. Read from
/proc/self/mounts, so nothing is started to find out.
"""
from __future__ import annotations

import errno
import os

ROOT = '/sys/fs/cgroup'
SYSTEMD = f'{ROOT}/systemd'
FIX = (f'mount one (as root: mount -t cgroup2 none {ROOT}), or start the '
       f'container with the host\'s {ROOT}')


def mount_types(mounts_text: str) -> dict[str, str]:
    """Mount point -> file system type; the last mount on a point wins."""
    types = {}
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            types[fields[1]] = fields[2]
    return types


def cgroup_problem(mounts_text: str) -> str | None:
    """What slurmd would miss, in one line; None when it can start."""
    types = mount_types(mounts_text)
    kind = types.get(ROOT)
    if kind == 'cgroup2':
        return None
    if kind == 'tmpfs':
        if types.get(SYSTEMD) in ('cgroup', 'cgroup2'):
            return None
        return (f'{ROOT} is a tmpfs without a cgroup file system at {SYSTEMD}'
                f' (slurmd cannot tell the cgroup version); {FIX}')
    if kind is None:
        return (f'no cgroup file system is mounted on {ROOT} (slurmd exits '
                f'with "No filesystem mounted on {ROOT}"); {FIX}')
    return f'{ROOT} holds a {kind} file system, not cgroup2 or tmpfs; {FIX}'


def local_cgroup_problem(path: str = '/proc/self/mounts') -> str | None:
    try:
        with open(path) as stream:
            return cgroup_problem(stream.read())
    except OSError as error:
        return f'cannot read {path} to find {ROOT}: {error.strerror}'


# --- One sandbox node made slow for real: its slurmd in a CPU-capped cgroup.
# Processes inherit their parent's cgroup at fork, so every job step the
# capped slurmd starts afterwards (slurmstepd and its tasks) is capped too:
# the sandbox runs no cgroup plugin of its own (proctrack/linuxproc,
# task/none) that would move them elsewhere. The limit is CFS bandwidth:
# cgroup v2's cpu.max "QUOTA PERIOD", v1's cpu.cfs_quota_us and
# cpu.cfs_period_us, both in microseconds (the kernel's
# Documentation/admin-guide/cgroup-v2.rst, "cpu.max", and
# Documentation/scheduler/sched-bwc.rst).

PERIOD_US = 100_000
#: Where cgroup v2 moves the processes of a hierarchy root that may not
#: hold both processes and a controller for its children (the root of a
#: container's cgroup namespace: the "no internal processes" rule).
EVACUATED = 'clusterproof-evacuated'


def cpu_hierarchies(mounts_text: str) -> tuple[list[str], list[str]]:
    """(cgroup2 mount points, cgroup v1 mount points with the cpu
    controller), from /proc/self/mounts."""
    unified, legacy = [], []
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        if fields[2] == 'cgroup2':
            unified.append(fields[1])
        elif fields[2] == 'cgroup' and 'cpu' in fields[3].split(','):
            legacy.append(fields[1])
    return unified, legacy


def group_of(proc_cgroup_text: str, version: int) -> str | None:
    """A process's cgroup path from /proc/PID/cgroup: the "0::" line (v2),
    or the line whose controllers include cpu (v1)."""
    for line in proc_cgroup_text.splitlines():
        number, _, rest = line.partition(':')
        controllers, _, path = rest.partition(':')
        if version == 2 and number == '0' and controllers == '':
            return path
        if version == 1 and 'cpu' in controllers.split(','):
            return path
    return None


def quota_us(cpus: float) -> int:
    """The CFS quota per PERIOD_US for *cpus* CPUs (0.1 = a tenth)."""
    if not 0 < cpus <= 1024:
        raise ValueError(f'a CPU cap must be above 0, got {cpus}')
    return max(1000, round(cpus * PERIOD_US))   # the kernel's minimum: 1 ms


class CpuCapError(RuntimeError):
    """The cap could not be applied; the message names the file and why."""


def _write(path, text: str) -> None:
    try:
        with open(path, 'w') as stream:
            stream.write(text)
    except OSError as error:
        raise CpuCapError(f'cannot write {text.strip()!r} to {path}: '
                          f'{error.strerror}') from error


def _read(path) -> str:
    with open(path) as stream:
        return stream.read()


def _move_all(source, target) -> None:
    """Every process of cgroup *source* into cgroup *target* (a few passes:
    a process may fork while it is moved; one that exits is gone)."""
    for _ in range(10):
        pids = _read(f'{source}/cgroup.procs').split()
        if not pids:
            return
        for pid in pids:
            try:
                with open(f'{target}/cgroup.procs', 'w') as stream:
                    stream.write(pid)
            except OSError as error:
                if error.errno != errno.ESRCH:     # ESRCH: it exited
                    raise CpuCapError(f'cannot move process {pid} into '
                                      f'{target}: {error.strerror}') from error
    raise CpuCapError(f'processes keep appearing in {source}')


class CpuCap:
    """Processes (*pids*) held to *cpus* CPUs in a cgroup of their own,
    named *name*, until undo(); v2 where /sys/fs/cgroup's cgroup2 offers
    the cpu controller, else v1's cpu hierarchy. A context manager."""

    def __init__(self, pids: list[int], name: str, cpus: float,
                 mounts_path: str = '/proc/self/mounts'):
        self.pids, self.name, self.cpus = list(pids), name, cpus
        self.quota = quota_us(cpus)
        unified, legacy = cpu_hierarchies(_read(mounts_path))
        unified = [m for m in unified if 'cpu' in _read(
            f'{m}/cgroup.controllers').split()]
        if unified:
            self.version, self.root = 2, unified[0]
        elif legacy:
            self.version, self.root = 1, legacy[0]
        else:
            raise CpuCapError('no cgroup hierarchy here offers the cpu '
                              'controller (cgroup2 with "cpu" in '
                              'cgroup.controllers, or a v1 cpu mount)')
        self.group = f'{self.root}/{name}'
        self.enabled_cpu = self.evacuated = False
        self.origins: dict[int, str] = {}

    def _origin(self, pid: int) -> str:
        path = group_of(_read(f'/proc/{pid}/cgroup'), self.version) or '/'
        directory = f'{self.root}{path}'.rstrip('/') or self.root
        # a path outside this mount's view (no cgroup namespace): its root
        return directory if os.path.isdir(directory) else self.root

    def apply(self) -> 'CpuCap':
        self.origins = {pid: self._origin(pid) for pid in self.pids}
        if self.version == 2:
            self._enable_cpu_below_root()
        os.makedirs(self.group, exist_ok=True)
        if self.version == 2:
            _write(f'{self.group}/cpu.max', f'{self.quota} {PERIOD_US}\n')
        else:
            _write(f'{self.group}/cpu.cfs_period_us', f'{PERIOD_US}\n')
            _write(f'{self.group}/cpu.cfs_quota_us', f'{self.quota}\n')
        for pid in self.pids:
            _write(f'{self.group}/cgroup.procs', f'{pid}\n')
        return self

    def _enable_cpu_below_root(self) -> None:
        control = f'{self.root}/cgroup.subtree_control'
        if 'cpu' in _read(control).split():
            return
        try:
            _write(control, '+cpu\n')
        except CpuCapError:
            # EBUSY: a namespace root holding processes; they go into a
            # leaf of their own first (what container runtimes do)
            os.makedirs(f'{self.root}/{EVACUATED}', exist_ok=True)
            self.evacuated = True
            _move_all(self.root, f'{self.root}/{EVACUATED}')
            _write(control, '+cpu\n')
        self.enabled_cpu = True

    def undo(self) -> None:
        """Everything back where it was: the processes (and what they
        started meanwhile) in their first cgroup, the group removed."""
        home = next(iter(self.origins.values()), self.root)
        evacuated = f'{self.root}/{EVACUATED}'
        if self.evacuated and home == self.root:
            home = evacuated
        steps = []
        if os.path.isdir(self.group):
            steps += [lambda: _move_all(self.group, home),
                      lambda: os.rmdir(self.group)]
        if self.enabled_cpu:
            steps.append(lambda: _write(
                f'{self.root}/cgroup.subtree_control', '-cpu\n'))
        if self.evacuated:
            steps += [lambda: _move_all(evacuated, self.root),
                      lambda: os.rmdir(evacuated)]
        failed = []
        for step in steps:
            try:
                step()
            except (OSError, CpuCapError) as error:
                failed.append(str(error))
        self.enabled_cpu = self.evacuated = False
        if failed:
            raise CpuCapError('could not undo the cap: ' + '; '.join(failed))

    def __enter__(self) -> 'CpuCap':
        try:
            return self.apply()
        except BaseException:
            self.undo()
            raise

    def __exit__(self, *exc) -> None:
        self.undo()
