"""Kusto.Language, Microsoft's KQL parser and semantic checker, run by the
machine's Node.js from the npm package pinned in tests/support/kusto/ (installed by
`scripts/setup.sh --test`). validate() answers the errors of each text: a
syntax error, an unknown name or a type mismatch. Tests reach it through the
`kusto` fixture, which marks them `kusto` (tests/conftest.py)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

KUSTO_DIR = Path(__file__).resolve().parent / 'kusto'
SCRIPT = KUSTO_DIR / 'validate.js'
PACKAGE = KUSTO_DIR / 'node_modules' / '@kusto' / 'language-service-next'


def require_kusto_language():
    if not shutil.which('node') or not PACKAGE.is_dir():
        pytest.fail('Kusto.Language is not installed: run '
                    '`bash scripts/setup.sh --test` (Node.js and '
                    'tests/support/kusto/node_modules)')


def validate(texts: dict[str, str], tables: dict[str, list[dict]],
             database: str = 'clusterproof') -> dict[str, list[dict]]:
    """name -> the Error diagnostics of that text, given the tables."""
    require_kusto_language()
    spec = {'database': database, 'tables': tables,
            'queries': [{'name': name, 'text': text}
                        for name, text in texts.items()]}
    done = subprocess.run(['node', str(SCRIPT)], input=json.dumps(spec),
                          capture_output=True, text=True, timeout=120,
                          cwd=KUSTO_DIR)
    assert done.returncode == 0, done.stderr
    return {item['name']: item['errors'] for item in json.loads(done.stdout)}


@pytest.fixture(scope='session')
def kusto():
    """validate(), where Kusto.Language is installed (a failure saying how to
    install it where not)."""
    require_kusto_language()
    return validate
