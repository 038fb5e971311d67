"""Throughput of every output parser on large hostile inputs.

    .venv/bin/python tests/bench/parser_throughput.py [--mb 20]

Prints MB/s per parser and input kind (random printable text; the tool's
banner then runs of the patterns that used to backtrack; the banner then
blank lines), for an input of ``--mb`` and one of half that size. "ratio" is
the time per MB at full size over the time per MB at half size: near 1 for a
linear parser, near 2 for a quadratic one. Not collected by pytest (no test_ prefix); the
property tests in tests/parsers/test_parsers_hostile.py bound the time on small input.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

from checks import parsers  # noqa: E402
from tests.support.hostile_text import BANNERS, RUNS, hostile, random_text


def hostile_mix(tool: str, size: int) -> str:
    """The tool's banner, then the known backtracking runs one after another."""
    share = size // len(RUNS)
    return BANNERS[tool] + ''.join(run * (share // len(run)) for run in RUNS)


def random_input(tool: str, size: int) -> str:
    return random_text(size)


def blank_lines(tool: str, size: int) -> str:
    return hostile(tool, '\n', size)


KINDS = {'random': random_input, 'hostile': hostile_mix,
         'blank-lines': blank_lines}


def measure(tool: str, text: str) -> float:
    began = time.perf_counter()
    parsers.parse(tool, text)
    return time.perf_counter() - began


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--mb', type=float, default=20.0,
                        help='size of the large input in MB (default 20)')
    parser.add_argument('--tool', action='append', choices=sorted(parsers.TOOLS),
                        help='only these tools (repeatable)')
    args = parser.parse_args(argv)
    size = int(args.mb * 1_000_000)
    tools = args.tool or sorted(parsers.TOOLS)
    print(f'{"tool":<10} {"input":<11} {"MB":>6} {"s":>7} {"MB/s":>8} '
          f'{"ratio":>6}')
    worst = 0.0
    for kind, make in KINDS.items():
        for tool in tools:
            t_half = measure(tool, make(tool, size // 2))
            t_full = measure(tool, make(tool, size))
            ratio = t_full / (2 * t_half) if t_half > 0 else float('inf')
            worst = max(worst, ratio)
            print(f'{tool:<10} {kind:<11} {size / 1e6:>6.1f} {t_full:>7.2f} '
                  f'{size / 1e6 / t_full:>8.1f} {ratio:>6.2f}', flush=True)
    print(f'worst ratio (time per MB at {args.mb:g} MB / at half): '
          f'{worst:.2f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
