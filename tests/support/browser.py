"""Headless Chromium (Debian's `chromium`, installed by
`scripts/setup.sh --test`). Tests reach it through the `chromium` fixture,
which marks them `browser` (tests/conftest.py)."""
import shutil
import subprocess

import pytest


@pytest.fixture(scope='session')
def chromium() -> str:
    """The chromium program (a failure saying how to install it where it is
    missing)."""
    found = shutil.which('chromium')
    if not found:
        pytest.fail('chromium is not installed: run `bash scripts/setup.sh '
                    '--test`')
    return found


def headless(chromium: str, *args, profile):
    # No sandbox as root; every host name resolves nowhere, so anything the
    # page tried to fetch would fail rather than leave this machine.
    return subprocess.run(
        [chromium, '--headless', '--no-sandbox', '--disable-gpu',
         '--hide-scrollbars', f'--user-data-dir={profile}',
         '--host-resolver-rules=MAP * ~NOTFOUND', *args],
        capture_output=True, text=True, timeout=120)
