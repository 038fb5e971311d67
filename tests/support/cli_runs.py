"""scripts/clusterproof run as a user runs it, in a subprocess."""
import subprocess
import sys

from tests.support.helpers import REPO

CLI = str(REPO / 'scripts' / 'clusterproof')


def cli(*args, env=None, stdin=None, cwd=None):
    return subprocess.run([sys.executable, CLI, *args], capture_output=True,
                          text=True, env=env, input=stdin, cwd=cwd,
                          timeout=120)
