"""BabelStream (UoB-HPC/BabelStream, formerly GPU-STREAM): the memory
bandwidth of one device, in GB/s.

Metrics ``copy_bw``, ``mul_bw``, ``add_bw``, ``triad_bw`` and (BabelStream
3 on) ``dot_bw``: the first column of BabelStream's table, its best rate,
printed in MBytes/sec (10^6 bytes, or MiBytes/sec with ``--mibibytes``) and
given here in GB/s (10^9 bytes), the unit of the GPUs' HBM peaks.

A run counts only with the four STREAM kernels in its table and no
"Validation failed" line (BabelStream checks its arrays after the timed
loops and prints that line, on stderr since 4.0: the checks parse stdout
and stderr together). Table lines may follow any amount of other text (a
build log). Reads each line once.
"""
from __future__ import annotations

import re

from .base import Metric, ParseResult, failure, success, to_float

TOOL = 'babelstream'
UNIT = 'GB/s'

KERNELS = {'Copy': 'copy_bw', 'Mul': 'mul_bw', 'Add': 'add_bw',
           'Triad': 'triad_bw', 'Dot': 'dot_bw'}
REQUIRED = ('Copy', 'Mul', 'Add', 'Triad')

#: bytes of one unit of the rate column's heading
RATE_UNITS = {'MBytes/sec': 1e6, 'MiBytes/sec': 2 ** 20,
              'GBytes/sec': 1e9, 'GiBytes/sec': 2 ** 30}

_BANNER = re.compile(r'^(BabelStream|GPU-STREAM)\s*$')
_HEADING = re.compile(r'^Function +(\S+) +Min \(sec\) +Max +Average$')
_FIELDS = {
    'version': re.compile(r'^Version: (\S+)'),
    'implementation': re.compile(r'^Implementation: (.+)$'),
    'precision': re.compile(r'^Precision: (\w+)'),
    'array_size': re.compile(r'^Array size: (.+)$'),
    'device': re.compile(r'^Using \w+ device (.+)$'),
    'driver': re.compile(r'^Driver: (\S+)'),
    'times': re.compile(r'^Running kernels (\d+) times'),
}


def parse(text: str) -> ParseResult:
    details: dict = {}
    rates: dict[str, float] = {}
    invalid: list[str] = []
    banner = False
    scale = None
    for raw in text.splitlines():
        line = raw.strip()
        if _BANNER.match(line):
            banner = True
            continue
        if line.startswith('Validation failed'):
            invalid.append(line)
            continue
        if not banner:
            continue
        heading = _HEADING.match(line)
        if heading:
            scale = RATE_UNITS.get(heading.group(1))
            details['rate_unit'] = heading.group(1)
            continue
        if scale is None:
            for name, pattern in _FIELDS.items():
                match = pattern.match(line)
                if match and name not in details:
                    details[name] = match.group(1)
            continue
        tokens = line.split()
        if len(tokens) == 5 and tokens[0] in KERNELS:
            rate = to_float(tokens[1])
            if rate is not None:
                rates[tokens[0]] = rate * scale / 1e9
    if not banner:
        return failure(TOOL, 'not babelstream output: no BabelStream or '
                             'GPU-STREAM banner')
    if 'rate_unit' not in details:
        return failure(TOOL, 'babelstream printed no results table '
                             '("Function MBytes/sec ..." heading missing: '
                             'the run stopped before its kernels finished)',
                       details=details)
    if scale is None:
        return failure(TOOL, f"babelstream rate unit {details['rate_unit']!r}"
                             ' is not one this parser knows', details=details)
    metrics = {KERNELS[name]: Metric(round(value, 6), UNIT)
               for name, value in rates.items()}
    missing = [name for name in REQUIRED if name not in rates]
    if missing:
        return failure(TOOL, 'babelstream table has no row for '
                             + ', '.join(missing) + ' (output cut short)',
                       metrics, details)
    if invalid:
        return failure(TOOL, 'babelstream validation failed: '
                             + '; '.join(invalid), metrics, details)
    return success(TOOL, metrics, details)
