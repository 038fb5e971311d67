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
