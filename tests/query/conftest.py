"""The query tests' store: a fixture a module may replace with its own."""
import pytest

from tests.support import query_store


@pytest.fixture
def home(tmp_path):
    """Two days of the small realistic store, each session file's
    modification time its last row's (settled: the index holds it)."""
    query_store.build(tmp_path, days=2)
    query_store.settle(tmp_path)
    return tmp_path
