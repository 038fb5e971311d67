"""A sandbox node made slow for real: its slurmd (and so every job step it
starts) in a cgroup capped to a fraction of a CPU, v2 or v1, and put back
after. The cap itself is tried on a busy process of this test's own."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts.cli import sandbox, sandbox_cgroup
from scripts.cli.sandbox_cgroup import CpuCap

# /proc/self/mounts as a hybrid host (Debian 11's systemd default, this
# project's development container) and a unified one (Debian 12) write it
HYBRID = """\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0
cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""
UNIFIED = 'cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n'


def test_the_cpu_controller_is_found_in_either_layout():
    assert sandbox_cgroup.cpu_hierarchies(HYBRID) == (
        ['/sys/fs/cgroup/unified'], ['/sys/fs/cgroup/cpu,cpuacct'])
    assert sandbox_cgroup.cpu_hierarchies(UNIFIED) == (['/sys/fs/cgroup'], [])


def test_a_process_cgroup_is_read_for_its_version():
    text = ('9:name=systemd:/\n4:memory:/job\n2:cpu,cpuacct:/slurm/n3\n'
            '0::/system.slice/ci.service\n')
    assert sandbox_cgroup.group_of(text, 1) == '/slurm/n3'
    assert sandbox_cgroup.group_of(text, 2) == '/system.slice/ci.service'
    assert sandbox_cgroup.group_of('4:memory:/x\n', 1) is None


def test_the_quota_is_a_fraction_of_the_period():
    assert sandbox_cgroup.quota_us(0.1) == 10_000
    assert sandbox_cgroup.quota_us(2) == 200_000
    assert sandbox_cgroup.quota_us(0.001) == 1000   # the kernel's least
    with pytest.raises(ValueError):
        sandbox_cgroup.quota_us(0)


def test_a_node_that_is_not_the_sandboxs_is_refused(tmp_path):
    with pytest.raises(sandbox.SandboxError, match='no node'):
        sandbox.slurmd_pid(tmp_path, 'sb-n9')
    with pytest.raises(sandbox.SandboxError, match='does not run'):
        sandbox.node_cpu_cap(tmp_path, 'sb-n3', 0.1)


def cpu_seconds(pid):
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def cpu_used(pid, seconds):
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - before


def test_a_capped_process_gets_its_fraction_and_is_put_back():
    if os.geteuid() != 0:
        if os.environ.get('CI', '').lower() not in ('', '0', 'false', 'no'):
            pytest.fail('CI runs as root: the CPU cap must be tried there')
        pytest.skip('moving a process between cgroups needs root')
    busy = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
    try:
        before = Path(f'/proc/{busy.pid}/cgroup').read_text()
        with CpuCap([busy.pid], f'clusterproof-test-{busy.pid}', 0.1) as cap:
            assert Path(cap.group).is_dir()
            assert f'/clusterproof-test-{busy.pid}' in Path(
                f'/proc/{busy.pid}/cgroup').read_text()
            time.sleep(0.3)           # the first period may be spent
            # a tenth of a CPU: 0.1 s a second (and any busy machine's less)
            assert cpu_used(busy.pid, 2.0) < 0.3
        assert not Path(cap.group).exists()
        assert Path(f'/proc/{busy.pid}/cgroup').read_text() == before
    finally:
        busy.kill()
        busy.wait()
