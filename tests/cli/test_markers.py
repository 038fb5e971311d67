"""The markers of the tests that need a real service are applied by the
fixtures that start it (tests/support/service_markers.py), at collection, so that `-m`
selects on them: a test using one of those fixtures, itself or through
another fixture, is left out of the fast tier, and every other test is in
it. Run on a pytest of its own (pytester) whose fixtures only stand in for
the services, under this suite's own collection hook."""
import pytest

from tests.support.service_markers import SERVICE_MARKERS

FAST = 'not sandbox and not browser and not kusto'

STANDINS = '''
import pytest

pytest_plugins = ['tests.support.service_markers']

@pytest.fixture(scope='session')
def slurm_sandbox():
    raise AssertionError('a service fixture ran in a collection')

chromium = kusto = slurm_sandbox

@pytest.fixture
def sandbox_env(slurm_sandbox):
    return {}
'''

TESTS = '''
def test_on_the_sandbox(slurm_sandbox): pass
def test_through_a_fixture_of_the_sandbox(sandbox_env): pass
def test_in_a_browser(chromium): pass
def test_with_kusto(kusto): pass
def test_of_a_parser(tmp_path): pass
'''


@pytest.fixture
def suite(pytester):
    pytester.makeconftest(STANDINS)
    pytester.makepyfile(test_services=TESTS)
    pytester.makeini('[pytest]\nmarkers =\n'
                     + ''.join(f'    {marker}: x\n' for marker in
                               SERVICE_MARKERS.values()))
    return pytester


def selected(suite, expression) -> set:
    result = suite.runpytest('--collect-only', '-q', '-p', 'no:hypothesispytest',
                             '-m', expression)
    return {line.split('::')[1] for line in result.outlines if '::' in line}


def test_a_test_using_the_sandbox_fixture_gets_the_sandbox_marker(suite):
    assert selected(suite, 'sandbox') == {
        'test_on_the_sandbox', 'test_through_a_fixture_of_the_sandbox'}


def test_each_service_fixture_marks_its_tests(suite):
    assert selected(suite, 'browser') == {'test_in_a_browser'}
    assert selected(suite, 'kusto') == {'test_with_kusto'}


def test_the_fast_tier_is_every_test_with_no_service(suite):
    assert selected(suite, FAST) == {'test_of_a_parser'}
    assert len(selected(suite, 'not nothing')) == 5


def test_the_markers_are_registered_for_every_service_fixture(request):
    registered = {line.split(':')[0]
                  for line in request.config.getini('markers')}
    assert set(SERVICE_MARKERS.values()) <= registered
