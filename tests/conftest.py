pytest_plugins = ['tests.loopback_azure']

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts.cli import sandbox


@dataclass
class RunningSandbox:
    dir: Path
    env: dict  # what a client subprocess needs (SLURM_CONF, Open MPI as root)


def _under_ci():
    return os.environ.get('CI', '').lower() not in ('', '0', 'false', 'no')


@pytest.fixture(scope='session')
def slurm_sandbox(tmp_path_factory):
    """The four-node Slurm sandbox, started once for the session (as the CLI does).

    Skipped where it cannot run (not root, packages missing), except under CI,
    where that is a failure. CLUSTERPROOF_TEST_SANDBOX_DIR picks its state
    directory (.ci/run sets it so that it can stop the sandbox after a crash).
    """
    problem = sandbox.check_prerequisites()
    if problem:
        if _under_ci():
            pytest.fail(f'CI needs the Slurm sandbox: {problem}', pytrace=False)
        pytest.skip(problem)
    directory = Path(os.environ.get('CLUSTERPROOF_TEST_SANDBOX_DIR')
                     or tmp_path_factory.mktemp('sandbox'))
    try:
        sandbox.start(directory, say=lambda _: None)
    except sandbox.SandboxError as error:
        pytest.fail(str(error), pytrace=False)
    env = sandbox.client_env(directory)
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield RunningSandbox(dir=directory.resolve(), env=env)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        sandbox.stop(directory, say=lambda _: None)
