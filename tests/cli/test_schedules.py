"""The schedule templates of scripts/schedules, as shipped: systemd units
verified by systemd-analyze, cron and scrontab lines parsed, and the wrapper
they all call run for real (lock, settings, log rotation)."""
import fcntl
import os
import shutil
import subprocess

import pytest
from crontab import CronTab

from tests.support.helpers import REPO

SCHEDULES = REPO / 'scripts' / 'schedules'
WRAPPER = SCHEDULES / 'run-acceptance.sh'
UNIT = 'clusterproof-acceptance'


def analyze(*args, env=None):
    if not shutil.which('systemd-analyze'):
        pytest.fail('systemd-analyze missing: bash scripts/setup.sh --test '
                    'installs systemd')
    return subprocess.run(['systemd-analyze', 'verify', '--man=no', *args],
                          capture_output=True, text=True, env=env,
                          timeout=120)


def system_root(tmp_path, unit_dir='systemd-system'):
    """A file system root with the units installed as the README says and
    the repository where their ExecStart expects it (/opt/clusterproof)."""
    root = tmp_path / 'root'
    (root / 'usr/lib/systemd').mkdir(parents=True)
    shutil.copytree('/usr/lib/systemd/system', root / 'usr/lib/systemd/system',
                    symlinks=True)
    units = root / 'etc/systemd/system'
    shutil.copytree(SCHEDULES / unit_dir, units)
    bin_dir = root / 'opt/clusterproof/scripts/schedules'
    bin_dir.mkdir(parents=True)
    shutil.copy2(WRAPPER, bin_dir)
    return root, units


def test_system_units_verify(tmp_path):
    root, units = system_root(tmp_path)
    result = analyze(f'--root={root}', str(units / f'{UNIT}.service'),
                     str(units / f'{UNIT}.timer'))
    assert (result.returncode, result.stderr) == (0, '')


def test_verify_catches_a_broken_unit(tmp_path):
    # systemd-analyze only warns about a bad value: stderr must be empty
    root, units = system_root(tmp_path)
    service = units / f'{UNIT}.service'
    service.write_text(service.read_text().replace('Type=oneshot',
                                                   'Type=oneshott'))
    result = analyze(f'--root={root}', str(service))
    assert 'Failed to parse service type' in result.stderr


def test_user_units_verify(tmp_path):
    # %h is the user's home: the repository is expected in ~/clusterproof
    home = tmp_path / 'home'
    units = home / '.config/systemd/user'
    shutil.copytree(SCHEDULES / 'systemd-user', units)
    (home / 'clusterproof').symlink_to(REPO)
    (tmp_path / 'run').mkdir()
    env = {**os.environ, 'HOME': str(home),
           'XDG_RUNTIME_DIR': str(tmp_path / 'run')}
    result = analyze('--user', str(units / f'{UNIT}.service'),
                     str(units / f'{UNIT}.timer'), env=env)
    assert (result.returncode, result.stderr) == (0, '')


@pytest.mark.parametrize('name', ['crontab', 'scrontab'])
def test_cron_lines_parse(name):
    tab = CronTab(tab=(SCHEDULES / name).read_text())
    jobs = list(tab)
    assert len(jobs) == 1
    job = jobs[0]
    assert job.is_valid() and job.is_enabled()
    assert str(job.slices) == '30 2 * * *'
    assert job.command == '$HOME/clusterproof/scripts/schedules/' \
                          'run-acceptance.sh'


def test_scrontab_options_are_accepted_by_slurm(slurm_sandbox):
    # the #SCRON lines are sbatch options: the real sbatch must take them
    options = [line.split(None, 1)[1].strip()
               for line in (SCHEDULES / 'scrontab').read_text().splitlines()
               if line.startswith('#SCRON ')]
    assert len(options) == 5
    result = subprocess.run(['sbatch', '--test-only', *options, '--wrap',
                             'true'], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert 'to start at' in result.stderr


def run_wrapper(home, *args, **env):
    return subprocess.run(['bash', str(WRAPPER), *args], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, 'CLUSTERPROOF_HOME': str(home),
                               **env})


def test_wrapper_logs_sources_settings_and_rotates(tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    (home / 'acceptance.env').write_text(
        'CLUSTERPROOF_ACCEPTANCE_ARGS="--help"\n')
    for _ in range(4):
        result = run_wrapper(home, CLUSTERPROOF_LOG_MAX_KB='1',
                             CLUSTERPROOF_LOG_KEEP='2')
        assert result.returncode == 0, result.stderr
    logs = home / 'logs'
    assert sorted(p.name for p in logs.iterdir()) == [
        'acceptance.log', 'acceptance.log.1', 'acceptance.log.2']
    text = (logs / 'acceptance.log').read_text()
    assert 'usage: clusterproof acceptance' in text
    assert text.rstrip().endswith('exit 0')


def test_wrapper_never_overlaps_a_running_one(tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    with open(home / 'acceptance.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = run_wrapper(home, '--help')
    assert result.returncode == 75
    assert 'still holds' in result.stderr
    assert 'usage:' not in (home / 'logs' / 'acceptance.log').read_text()
    assert run_wrapper(home, '--help').returncode == 0
