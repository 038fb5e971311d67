"""scripts/setup.sh says what to do when pip cannot install the
requirements."""
import subprocess

from tests.support.helpers import REPO, suite_env


def test_setup_says_what_to_do_when_pip_fails(tmp_path):
    # A checkout whose requirements no index has: pip fails, setup says so
    (tmp_path / 'scripts').mkdir()
    (tmp_path / 'scripts' / 'setup.sh').write_text(
        (REPO / 'scripts' / 'setup.sh').read_text())
    (tmp_path / 'requirements.txt').write_text('no-such-package-cp==0.0.1\n')
    env = suite_env(tmp_path / 'home', {
        'PIP_INDEX_URL': 'http://127.0.0.1:9/simple', 'PIP_RETRIES': '0',
        'PIP_TIMEOUT': '2', 'PIP_CONFIG_FILE': '/dev/null',
        'PATH': '/usr/sbin:/usr/bin:/sbin:/bin'})
    result = subprocess.run(['bash', 'scripts/setup.sh'], cwd=tmp_path,
                            env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 1
    assert result.stderr.rstrip().splitlines()[-1] == (
        'setup: pip could not install requirements.txt into .venv (its error '
        'is above); check the network or the package index (PIP_INDEX_URL, a '
        'proxy), then run bash scripts/setup.sh again')
    assert not (tmp_path / '.venv' / '.requirements.sha256').exists()
