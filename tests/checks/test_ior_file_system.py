"""IOR's file system is part of its reference key (checks/storage/ior.py):
a site reference measured on one file system never judges, nor is shown
beside, a run on another, and their baselines never mix."""
import subprocess

from checks.common import references
from checks.common.reference_key import reference_key
from checks.storage.ior import file_system_of

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


def test_this_hosts_findmnt_answers_in_that_form(tmp_path):
    done = subprocess.run(['findmnt', '-n', '-o', 'FSTYPE,TARGET', '-T',
                           str(tmp_path)], capture_output=True, text=True)
    fstype, target = file_system_of(done.stdout).split(':', 1)
    assert fstype and str(tmp_path).startswith(target)


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
