"""The markers of the tests that need a real service (tests/pytest.ini),
applied by the fixtures that start it: a test that uses one of these
fixtures, itself or through another fixture, gets its marker at
collection, before `-m` selects. The fast tier is every test with none:
`-m "not sandbox and not browser and not kusto"`."""
import pytest

# fixture -> marker
SERVICE_MARKERS = {'slurm_sandbox': 'sandbox', 'chromium': 'browser',
                   'kusto': 'kusto'}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        used = getattr(item, 'fixturenames', ())
        for fixture, marker in SERVICE_MARKERS.items():
            if fixture in used:
                item.add_marker(marker)
