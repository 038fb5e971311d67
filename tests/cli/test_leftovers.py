"""Tests clean up after themselves: each runs with its own HOME and TMPDIR,
and one that leaves a file of the suite there (a ~/.clusterproof, a
ReFrame rfm-*.log) fails, naming it, even though its own assertions held."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.helpers import REPO

SAMPLE = '''
import os
import tempfile
from pathlib import Path


def test_leaves_a_store_in_home():
    (Path(os.environ['HOME']) / '.clusterproof' / 'logs').mkdir(parents=True)


def test_leaves_a_reframe_log_in_tmpdir():
    Path(tempfile.gettempdir(), 'rfm-abcd1234.log').write_text('')


def test_another_tool_s_cache_goes_with_the_directory():
    (Path(os.environ['HOME']) / '.cache' / 'tool').mkdir(parents=True)
'''


def test_each_test_has_its_own_home_and_tmpdir(tmp_path):
    home, tmp = Path(os.environ['HOME']), Path(tempfile.gettempdir())
    assert home.name == 'home' and tmp == Path(os.environ['TMPDIR'])
    assert tmp.parent == home.parent
    assert not list(home.iterdir()) and not list(tmp.iterdir())


def test_a_test_that_leaves_suite_files_behind_fails(tmp_path):
    sample = tmp_path / 'sample_leftovers.py'
    sample.write_text(SAMPLE)
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'tests.conftest',
         '-p', 'no:cacheprovider', '--rootdir', str(tmp_path),
         '--basetemp', str(tmp_path / 'base'), str(sample)],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert '3 passed, 2 errors' in out, out
    assert "the test left files of the suite behind: ['" in out
    assert "home/.clusterproof']" in out and "tmp/rfm-abcd1234.log']" in out
    assert 'test_another_tool_s_cache' not in out.split('short test summary')[-1]
