"""mpi-stage (github.com/edwardsp/mpi-stage): what ``mpi_stage --verbose``
writes to stderr. Without ``--verbose`` it prints nothing at all.

Progress lines are rewritten in place with carriage returns, so CR counts as
a line break here. The Timings block of recent versions subtracts the phase
clocks the wrong way round: every phase but "Topology check" prints
negative (``Copy phase: -0.956176``), its size is right. Phase times are
therefore read as magnitudes; the signed values stay in ``details``.

Metrics: ``bandwidth`` in MiB/s (the "Copy complete" line: mpi_stage
labels it MB/s but computes bytes / 2^20 / s, from the end of
pre-validation), ``total_time``
and ``copy_time`` (s). A no-copy run (every node already holds the file)
has no bandwidth: it succeeds with ``details['copied'] = False``.
"""
from __future__ import annotations

import re

from .base import Metric, failure, mpi_abort, success, to_float

TOOL = 'mpi-stage'

_NUMBER = r'(-?[\d.]+(?:[eE][-+]?\d+)?)'
_ERROR = re.compile(r'^(ERROR: .+)$', re.M)
_COPY_REQUIRED = re.compile(r'^\[0\] Copy required: (yes|no)$', re.M)
_COPY_COMPLETE = re.compile(
    rf'^\[0\] Copy complete, Bandwidth: {_NUMBER} MB/s$', re.M)
_PROGRESS = re.compile(rf'^\[0\] Progress: (\d+)%, Bandwidth: {_NUMBER} MB/s',
                       re.M)
_NO_COPY = '[0] No copy needed, all ranks synchronized'
_TIMING = re.compile(rf'^[ \t]+([A-Z][\w -]+?):[ \t]+{_NUMBER}[ \t]*$', re.M)
_SOURCE_RANK = re.compile(r'^\[0\] (?:Using|Auto-selected) source rank (\d+)$',
                          re.M)
_CHECKSUM = re.compile(r'^\[0\] Source checksum computed: (\d+)$', re.M)
_TOPOLOGY = re.compile(rf'^\[0\] Topology check done: {_NUMBER} s$', re.M)

# Timings block label -> key in details['timings']
_PHASES = {
    'Topology check': 'topology_check',
    'Source metadata': 'source_metadata',
    'Pre-validation': 'pre_validation',
    'Copy phase': 'copy_phase',
    'Post-validation': 'post_validation',
    'Total time': 'total_time',
}


def _lines(text: str) -> str:
    return (text or '').replace('\r\n', '\n').replace('\r', '\n')


def _timings(text: str) -> dict:
    block = text.partition('[0] Timings (s):')[2]
    timings = {}
    for label, value in _TIMING.findall(block):
        if label in _PHASES and to_float(value) is not None:
            timings[_PHASES[label]] = to_float(value)
    return timings


def parse(text: str):
    text = _lines(text)
    if not text.strip():
        return failure(TOOL, 'empty output: mpi_stage prints nothing without '
                             '--verbose (parse its stderr)')
    errors = list(dict.fromkeys(_ERROR.findall(text)))
    if errors:
        return failure(TOOL, '; '.join(errors))
    abort = mpi_abort(text)
    if abort:
        return failure(TOOL, f'MPI abort: {abort}')
    if '[0] ' not in text:
        return failure(TOOL, "not mpi-stage output (no '[0] ...' lines)")

    details = {}
    if match := _TOPOLOGY.search(text):
        details['topology_check_s'] = to_float(match[1])
    if match := _SOURCE_RANK.search(text):
        details['source_rank'] = int(match[1])
    if match := _CHECKSUM.search(text):
        details['source_checksum'] = match[1]
    progress = [[int(p), to_float(bw)] for p, bw in _PROGRESS.findall(text)]
    if progress:
        details['progress'] = progress

    required = _COPY_REQUIRED.search(text)
    if not required:
        return failure(TOOL, "no '[0] Copy required' line: output cut before "
                             'pre-validation ended', details=details)
    details['copied'] = required[1] == 'yes'
    complete = _COPY_COMPLETE.search(text)
    if details['copied'] and not complete:
        last = f' (last progress {progress[-1][0]}%)' if progress else ''
        return failure(TOOL, f'copy did not complete{last}: truncated output',
                       details=details)
    if not details['copied'] and _NO_COPY not in text:
        return failure(TOOL, "'Copy required: no' without 'No copy needed' "
                             'line: truncated output', details=details)
    details['post_validated'] = '[0] Post-validation complete' in text

    timings = _timings(text)
    details['timings'] = timings
    for phase in ('copy_phase', 'total_time'):
        # The Total time line ends the output; without its newline it is cut.
        if phase not in timings or not re.search(r'Total time:\s+\S+\n',
                                                 text):
            return failure(TOOL, 'no Timings block (or it is cut): truncated '
                                 'output, or mpi_stage ran without --verbose',
                           details=details)

    metrics = {
        'total_time': Metric(abs(timings['total_time']), 's'),
        'copy_time': Metric(abs(timings['copy_phase']), 's'),
    }
    if complete:
        metrics['bandwidth'] = Metric(to_float(complete[1]), 'MiB/s')
    else:
        details['skipped'] = ('no copy: every node already holds the file '
                              '(pre-validation matched)')
    return success(TOOL, metrics, details)
