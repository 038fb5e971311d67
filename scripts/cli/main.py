"""Subcommand dispatch for scripts/clusterproof."""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from config.results.store import files as store

# Each module has add_parser(subparsers), which sets func=run.
SUBCOMMANDS = ['parse', 'ingest', 'sandbox', 'deploy', 'sync', 'query', 'report',
               'acceptance', 'discover', 'baseline', 'azure-reports']

EXIT_USAGE = 2


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of *only* that one: a command
    imports its own module alone (the acceptance module imports ReFrame,
    0.7 s that `query` or `report` need not pay)."""
    parser = argparse.ArgumentParser(
        prog='clusterproof',
        description='ReFrame acceptance suite for Azure HPC/AI clusters: '
                    'parse benchmark outputs, keep results, run a Slurm '
                    'sandbox, deploy the Azure side.')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    for name in ([only] if only else SUBCOMMANDS):
        importlib.import_module(
            f"scripts.cli.{name.replace('-', '_')}").add_parser(subparsers)
    return parser


# Commands whose exit 1 means "findings" (which the scheduled units count as
# success): a crash of theirs must read as a broken run, 2.
CRASH_IS_BROKEN = ('acceptance',)


def main(argv=None) -> int:
    command = (sys.argv[1:] if argv is None else list(argv))[:1]
    try:
        return _main(argv)
    except Exception:
        if not command or command[0] not in CRASH_IS_BROKEN:
            raise
        traceback.print_exc()
        print(f'clusterproof {command[0]}: crashed (traceback above); '
              f'exit {EXIT_USAGE}: a broken run', file=sys.stderr)
        return EXIT_USAGE


def _main(argv=None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words and words[0] in SUBCOMMANDS
                          else None)
    args = parser.parse_args(argv)
    if not getattr(args, 'func', None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except store.HomeError as err:
        print(f'clusterproof: {err}', file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # `clusterproof ... | head`: the reader left; not an error of ours.
        sys.stderr.close()
        return 141
