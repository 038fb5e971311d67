"""`clusterproof parse TOOL FILE`: metrics of one raw output, as JSON."""
from __future__ import annotations

import json
import sys

from checks import parsers


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'parse', help='print the metrics of one benchmark output as JSON',
        description='Parse one raw benchmark output with the same parser the '
                    'checks use. FILE is what the tool wrote (HPCG: its '
                    'report file; mpi-stage: its stderr). Exit 0 when the '
                    'output parses and reports success, 1 when it does not.')
    parser.add_argument('tool', choices=sorted(parsers.TOOLS),
                        metavar='TOOL', help=' '.join(sorted(parsers.TOOLS)))
    parser.add_argument('file', metavar='FILE', help="output file, or '-'")
    parser.set_defaults(func=run)


def read_text(path: str) -> str:
    if path == '-':
        return sys.stdin.read()
    with open(path, errors='replace') as fp:
        return fp.read()


def run(args) -> int:
    try:
        text = read_text(args.file)
    except OSError as err:
        print(f'clusterproof parse: cannot read {args.file}: '
              f'{err.strerror}', file=sys.stderr)
        return 2
    result = parsers.parse(args.tool, text)
    json.dump(result.to_json(), sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0 if result.ok else 1
