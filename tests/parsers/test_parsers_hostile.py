"""Every parser, on text that is not its tool's output: no exception, a
reason that says so, and time linear in the input (no backtracking regular
expression can stall it). Throughput on large input: tests/bench/."""
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from checks import parsers
from tests.support.hostile_text import BANNERS, RUNS, hostile, random_text

TOOLS = sorted(parsers.TOOLS)
# 400 k characters: a linear parser reads them in well under a second; a
# quadratic one needs ~10^11 steps (hours). The bound leaves room for a
# loaded CI machine.
LARGE = 400_000
SECONDS = 5.0


def _parse_timed(tool, text):
    began = time.perf_counter()
    result = parsers.parse(tool, text)
    return result, time.perf_counter() - began


@pytest.mark.parametrize('tool', TOOLS)
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text())
def test_no_parser_raises_on_arbitrary_text(tool, text):
    result = parsers.parse(tool, text)
    assert result.tool == tool
    assert result.ok is False
    assert isinstance(result.reason, str) and result.reason


@pytest.mark.parametrize('tool', TOOLS)
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(run=st.text(min_size=1, max_size=5))
def test_no_parser_stalls_on_a_long_run_of_any_pattern(tool, run):
    # The banner gets the parser past its first test; the run is repeated to
    # a large input, where any super-linear pattern shows.
    result, seconds = _parse_timed(tool, hostile(tool, run, LARGE))
    assert seconds < SECONDS, (tool, run, seconds)
    assert result.tool == tool


@pytest.mark.parametrize('tool', TOOLS)
@pytest.mark.parametrize('run', RUNS)
def test_known_stalls_stay_linear(tool, run):
    # Each of these took minutes before (e.g. hpcg on blank lines).
    _, seconds = _parse_timed(tool, hostile(tool, run, LARGE))
    assert seconds < SECONDS, (tool, repr(run), seconds)


@pytest.mark.parametrize('tool', TOOLS)
def test_foreign_text_is_called_foreign(tool):
    result = parsers.parse(tool, random_text(200_000))
    assert not result.ok
    assert result.reason.startswith(f'not {tool} output'), result.reason


def test_hpcg_is_not_fooled_by_the_word_hpcg():
    text = random_text(50_000) + '\nsee HPCG and Final Summary below\n' + \
        random_text(50_000, seed=2)
    result = parsers.parse('hpcg', text)
    assert result.reason.startswith('not hpcg output'), result.reason


def test_a_number_too_long_to_read_is_foreign_not_a_crash():
    result = parsers.parse('osu', BANNERS['osu'] + '1' * 20_000)
    assert not result.ok and result.reason.startswith('not osu output')


def test_every_tool_has_a_banner():
    assert set(BANNERS) == set(TOOLS)
