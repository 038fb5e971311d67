# Fixtures of the support modules, for every test; pytester runs a pytest of
# its own (tests/cli/test_markers.py).
pytest_plugins = ['pytester', 'tests.support.service_markers',
                  'tests.support.loopback_azure',
                  'tests.support.acceptance_runs', 'tests.support.browser',
                  'tests.support.kql_validator',
                  'tests.support.loopback_impact']

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts.cli import sandbox
from tests.support.sandbox_runs import restart_dead_daemons

# What clusterproof and ReFrame leave in a home or a temporary directory when
# a test lets them (no CLUSTERPROOF_HOME of its own, ReFrame's first log).
# Other tools' caches (lark's grammar, Chromium's profile, azure-identity's
# token cache) go with the private directories.
SUITE_LEFTOVERS = ('.clusterproof', '.reframe', 'rfm-*.log',
                   'clusterproof-sandbox', 'clusterproof-*')


def suite_leftovers(*directories):
    """The suite's own files under ``directories``, as paths."""
    return sorted(str(path) for directory in directories
                  for pattern in SUITE_LEFTOVERS
                  for path in Path(directory).glob(pattern))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == 'call':
        item.cp_call_passed = report.passed


@pytest.fixture(autouse=True)
def private_home_and_tmpdir(request, tmp_path_factory, monkeypatch):
    """Every test runs with a HOME and a TMPDIR of its own, so nothing lands
    in the real ones; after a passing test they must hold none of the
    suite's files, and they are deleted (kept when the test failed)."""
    base = tmp_path_factory.mktemp('user')
    home, tmp = base / 'home', base / 'tmp'
    home.mkdir()
    tmp.mkdir()
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.setenv('TMPDIR', str(tmp))
    monkeypatch.setattr(tempfile, 'tempdir', None)
    yield home, tmp
    if getattr(request.node, 'cp_call_passed', False):
        left = suite_leftovers(home, tmp)
        shutil.rmtree(base, ignore_errors=True)
        assert not left, f'the test left files of the suite behind: {left}'


@pytest.fixture(autouse=True)
def translations_of_the_test_alone(monkeypatch):
    """In the tests' own process a query is translated, or found in the
    test's home, never in the translations set up beside .venv
    (translate_shipped.py), which would hide one a test means to make."""
    from scripts.query import translator
    monkeypatch.setattr(translator, 'shipped', None)


@dataclass
class RunningSandbox:
    dir: Path
    env: dict  # what a client subprocess needs (SLURM_CONF, Open MPI as root)


def _under_ci():
    return os.environ.get('CI', '').lower() not in ('', '0', 'false', 'no')


# The session's sandbox directory, once its fixture started it.
_STARTED: list[Path] = []


def pytest_runtest_setup(item):
    if _STARTED and 'slurm_sandbox' in item.fixturenames:
        dead = restart_dead_daemons(_STARTED[0])
        if dead:
            item.warn(pytest.PytestWarning(
                f'sandbox daemons {", ".join(dead)} had died under an earlier '
                'test; the sandbox was started again'))


@pytest.fixture(scope='session')
def slurm_sandbox(tmp_path_factory):
    """The Slurm sandbox, started once for the session (as the CLI does).

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
    _STARTED.append(directory)
    try:
        yield RunningSandbox(dir=directory.resolve(), env=env)
    finally:
        _STARTED.clear()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        sandbox.stop(directory, say=lambda _: None)
