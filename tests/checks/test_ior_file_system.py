"""IOR's file system is part of its reference key (checks/storage/ior.py):
a site reference measured on one file system never judges, nor is shown
beside, a run on another, and their baselines never mix."""
import os
import shutil
import subprocess

from checks.common import references
from checks.common.reference_key import reference_key
from checks.storage.ior import (FILE_SYSTEM_FILE, file_system_command,
                                file_system_of)

METHOD = {'api': 'POSIX', 'block_size': '2M', 'transfer_size': '2M',
          'segments': 384, 'file_per_process': True, 'direct_io': False,
          'tasks_per_node': 2}
SITE_IOR = """\
sources:
  Site: "measured on this site's NFS export"
HB176rs_v4:
  nfs:
    method: {api: POSIX, block_size: 2M, transfer_size: 2M, segments: 384,
             file_per_process: true, direct_io: false, tasks_per_node: 2,
             file_system: 'nfs:/shared'}
    nodes: 2
    write_bandwidth_mib: {value: 600, lower: -0.1, upper: null, unit: MiB/s, source: Site}
"""


def test_findmnt_output_names_type_and_mount_point():
    assert file_system_of('lustre /lustre\n') == 'lustre:/lustre'
    assert file_system_of('nfs4   /shared\n') == 'nfs4:/shared'
    # the key's separators never come through
    assert file_system_of('fuse.x /mnt/a,b|c=d\n') == 'fuse.x:/mnt/a_b_c_d'
    assert file_system_of('') == file_system_of('findmnt: bad\n') == ''


def _job_answer(directory, path=None):
    """What the job's file-system step writes for *directory*."""
    env = {**os.environ, 'PATH': path} if path else None
    subprocess.run([shutil.which('bash'), '-c',
                    file_system_command(str(directory))],
                   cwd=directory, env=env, check=True, timeout=30)
    return file_system_of(
        (directory / FILE_SYSTEM_FILE).read_text())


def test_this_hosts_answer_is_in_that_form(tmp_path):
    # findmnt's answer where it can tell, the fallback's where it cannot
    # (a chroot): either way a type and where the directory is mounted
    fstype, target = _job_answer(tmp_path).split(':', 1)
    assert fstype and fstype != 'unknown'
    assert target == 'unknown' or str(tmp_path).startswith(target)


def test_without_findmnt_type_from_stat_and_mount_point_from_mountinfo(
        tmp_path):
    # a findmnt that, as in a chroot, finds nothing for the directory
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'findmnt').write_text('#!/bin/sh\nexit 1\n')
    (bin_dir / 'findmnt').chmod(0o755)
    fstype, target = _job_answer(
        tmp_path, f'{bin_dir}:{os.environ["PATH"]}').split(':', 1)
    stat = subprocess.run(['stat', '-f', '-c', '%T', str(tmp_path)],
                          capture_output=True, text=True, check=True)
    assert fstype == stat.stdout.strip()
    mounts = [line.split()[4] for line in
              open('/proc/self/mountinfo').read().splitlines()]
    holding = [m for m in mounts
               if f'{tmp_path}/'.startswith(m.rstrip('/') + '/')]
    assert target == (max(holding, key=len) if holding else 'unknown')
    assert file_system_of('ext2/ext3 unknown\n') == 'ext2/ext3:unknown'


def test_two_file_systems_never_share_a_reference(tmp_path, monkeypatch):
    (tmp_path / 'ior.yaml').write_text(SITE_IOR)
    monkeypatch.setenv(references.OVERRIDE_ENV, str(tmp_path))
    try:   # the family is read again for another search path
        on_nfs = references.find('ior', 'write_bandwidth_mib',
                                 'Standard_HB176rs_v4',
                                 {**METHOD, 'file_system': 'nfs:/shared'}, 2)
        on_lustre = references.find('ior', 'write_bandwidth_mib',
                                    'Standard_HB176rs_v4',
                                    {**METHOD, 'file_system':
                                     'lustre:/lustre'}, 2)
    finally:
        monkeypatch.delenv(references.OVERRIDE_ENV)
    assert on_nfs is not None and on_nfs.same_method
    assert on_nfs.reference.value == 600
    assert on_lustre is None
    keys = {reference_key('write_bandwidth_mib', 'HB176rs_v4',
                          {**METHOD, 'file_system': fs}, 2)
            for fs in ('nfs:/shared', 'lustre:/lustre')}
    assert len(keys) == 2
