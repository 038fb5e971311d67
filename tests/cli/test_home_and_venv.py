"""A new user's first hour: the CLI from any shell, one clear line when
CLUSTERPROOF_HOME is unusable, ReFrame's files out of the checkout, and
printed next steps that work as printed."""
import os
import re
import shlex
import shutil
import subprocess
import sys

from scripts.cli import repo
from tests.support.helpers import DATA, REPO, suite_env

CLI = str(REPO / 'scripts' / 'clusterproof')
# This interpreter without site-packages: a shell where the venv is not
# activated and the system Python has no ReFrame.
BARE_PYTHON = [getattr(sys, '_base_executable', sys.executable), '-S']


def _run(argv, cwd, env=None):
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_cli_finds_the_checkout_venv_from_any_shell(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != 'VIRTUAL_ENV'}
    result = _run([*BARE_PYTHON, CLI, 'parse', 'stream',
                   str(DATA / 'stream' / 'stream_c_omp2_20M.out')],
                  cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert '"triad_bw"' in result.stdout


def test_cli_without_a_venv_says_how_to_set_up(tmp_path):
    checkout = tmp_path / 'checkout'
    (checkout / 'scripts').mkdir(parents=True)
    shutil.copy(CLI, checkout / 'scripts' / 'clusterproof')
    result = _run([*BARE_PYTHON, 'scripts/clusterproof', 'parse', 'ior', 'x'],
                  cwd=checkout)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f'clusterproof: ReFrame is not installed for {BARE_PYTHON[0]}; set '
        'up the checkout first: bash scripts/setup.sh']


def test_unusable_home_is_one_line_naming_the_variable(tmp_path):
    not_a_dir = tmp_path / 'file'
    not_a_dir.write_text('')
    env = suite_env(not_a_dir, {'TMPDIR': str(tmp_path)})
    expected = (f'cannot use CLUSTERPROOF_HOME={not_a_dir}: not a directory; '
                'point CLUSTERPROOF_HOME at a writable directory')
    reframe = _run([str(repo.VENV_BIN / 'reframe'), '-C', 'config/config.py',
                    '-c', 'checks', '-l'], cwd=REPO, env=env)
    assert reframe.returncode != 0
    assert expected in reframe.stdout + reframe.stderr
    assert 'Traceback' not in reframe.stdout + reframe.stderr
    # ReFrame's last line names its log files: none that is gone, and its
    # first log is not left in the temporary directory either
    named = re.findall(r"'([^']*rfm-[^']*\.log)'", reframe.stdout)
    assert all(os.path.exists(path) for path in named), named
    assert not list(tmp_path.glob('rfm-*.log'))
    ingest = _run([sys.executable, CLI, 'ingest', 'stream',
                   str(DATA / 'stream' / 'stream_c_omp2_20M.out'),
                   '--system', 'local', '--partition', 'default'],
                  cwd=tmp_path, env=env)
    assert ingest.returncode == 2
    assert ingest.stderr == f'clusterproof: {expected}\n'


def test_home_below_a_file_names_the_blocking_path(tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    (home / 'logs').write_text('')
    env = suite_env(home, {'TMPDIR': str(tmp_path)})
    result = _run([sys.executable, CLI, 'ingest', 'stream',
                   str(DATA / 'stream' / 'stream_c_omp2_20M.out'),
                   '--system', 'local', '--partition', 'default'],
                  cwd=tmp_path, env=env)
    assert f'not a directory: {home / "logs"}' in result.stderr


def test_stage_and_output_go_under_the_home_not_the_checkout(tmp_path):
    home = tmp_path / 'home'
    cwd = tmp_path / 'cwd'
    cwd.mkdir()
    result = _run([str(repo.VENV_BIN / 'reframe'), '-C',
                   str(REPO / 'config' / 'config.py'), '--system', 'local',
                   '-c', str(REPO / 'checks' / 'cpu' / 'hpcc.py'),
                   '--dry-run'], cwd=cwd, env=suite_env(home))
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(cwd.iterdir()) == []
    # one stage directory per session: sessions sharing a home never meet
    assert list((home / 'runs').glob('*/stage/**/rfm_job.sh'))


def test_printed_reframe_command_works_from_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = repo.reframe_command_line('--system', 'local', '-c', 'checks', '-l')
    assert line.startswith(str(REPO / '.venv' / 'bin' / 'reframe'))
    result = _run(shlex.split(line), cwd=tmp_path,
                  env=suite_env(tmp_path / 'home'))
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'IorCheck' in result.stdout
    monkeypatch.chdir(REPO)
    assert repo.reframe_command_line('-c', 'checks', '-r') == \
        '.venv/bin/reframe -C config/config.py -c checks -r'


def test_temporary_directories_of_passed_tests_are_removed(request):
    assert request.config.getini('tmp_path_retention_policy') == 'failed'


def test_deploy_checks_the_home_before_calling_azure(tmp_path):
    not_a_dir = tmp_path / 'file'
    not_a_dir.write_text('')
    env = suite_env(not_a_dir, {'PATH': str(tmp_path)})   # no az either
    result = _run([sys.executable, CLI, 'deploy', '--resource-group', 'rg',
                   '--principal-id', '00000000-0000-0000-0000-000000000000'],
                  cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert result.stderr == (
        f'clusterproof: cannot use CLUSTERPROOF_HOME={not_a_dir}: not a '
        'directory; point CLUSTERPROOF_HOME at a writable directory\n')
