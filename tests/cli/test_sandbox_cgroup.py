"""The sandbox checks for the cgroup file system slurmd needs before it
starts anything, and says in one line what is missing."""
import shutil
import subprocess
import sys

import pytest

from scripts.cli import sandbox_cgroup
from tests.support.helpers import REPO

# /proc/self/mounts lines as Debian 12 writes them
V1 = """\
sysfs /sys sysfs ro,nosuid,nodev,noexec,relatime 0 0
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
"""
V2 = 'cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n'
BARE = 'sysfs /sys sysfs ro,nosuid,nodev,noexec,relatime 0 0\n'


def test_cgroup_v1_and_v2_are_accepted():
    assert sandbox_cgroup.cgroup_problem(V1) is None
    assert sandbox_cgroup.cgroup_problem(BARE + V2) is None


def test_a_bare_sys_fs_cgroup_is_named_with_the_fix():
    problem = sandbox_cgroup.cgroup_problem(BARE)
    assert problem.startswith('no cgroup file system is mounted on /sys/fs/cgroup')
    assert 'mount -t cgroup2 none /sys/fs/cgroup' in problem
    assert '\n' not in problem
    tmpfs_only = sandbox_cgroup.cgroup_problem(
        BARE + 'tmpfs /sys/fs/cgroup tmpfs rw 0 0\n')
    assert 'without a cgroup file system at /sys/fs/cgroup/systemd' in tmpfs_only


@pytest.mark.skipif(not shutil.which('unshare'), reason='no unshare(1)')
def test_sandbox_start_without_cgroups_stops_before_starting(tmp_path):
    # A private mount namespace without /sys/fs/cgroup: a container started
    # without the host's cgroups.
    state = tmp_path / 'sbx'
    script = (f'umount -R /sys/fs/cgroup || exit 77; exec {sys.executable} '
              f'scripts/clusterproof sandbox start --dir {state}')
    result = subprocess.run(['unshare', '--mount', '--propagation', 'private',
                             'sh', '-c', script], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    if result.returncode == 77:
        pytest.skip('cannot unmount /sys/fs/cgroup in a mount namespace here')
    if result.stderr.startswith('unshare:'):
        # e.g. in a chroot: "cannot change root filesystem propagation"
        pytest.skip('cannot make a private mount namespace here: '
                    + result.stderr.strip().splitlines()[0])
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith('cannot run the Slurm sandbox: no cgroup file '
                               'system is mounted on /sys/fs/cgroup')
    assert not state.exists()
