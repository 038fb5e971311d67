"""HPC Challenge (hpcc 1.5): the ``key=value`` lines of its Summary section.

hpcc writes its results to ``hpccoutf.txt`` and appends to it, so a file can
hold several runs: the last complete Summary section is read. Metric names
are hpcc's own summary keys, verbatim. ``Success=0``, a FAILED residual
(HPL or PTRANS) or a failed verification makes the run fail. A negative
value is hpcc's "not measured" (e.g. ping-pong with one process): the key is
left out of the metrics and listed in ``details['not_measured']``.
"""
from __future__ import annotations

import re

from .base import Metric, failure, mpi_abort, success, to_float

TOOL = 'hpcc'

# The contract's metrics (DESIGN.md), then the others worth a trend line.
REQUIRED = {
    'HPL_Tflops': 'Tflop/s',
    'StarSTREAM_Triad': 'GB/s',
    'SingleSTREAM_Triad': 'GB/s',
    'PTRANS_GBs': 'GB/s',
    'MPIRandomAccess_GUPs': 'GUP/s',
    'AvgPingPongLatency_usec': 'us',
    'AvgPingPongBandwidth_GBytes': 'GB/s',
}
EXTRA = {
    **{f'{scope}STREAM_{kernel}': 'GB/s' for scope in ('Star', 'Single')
       for kernel in ('Copy', 'Scale', 'Add')},
    'StarDGEMM_Gflops': 'Gflop/s',
    'SingleDGEMM_Gflops': 'Gflop/s',
    'MPIFFT_Gflops': 'Gflop/s',
    'StarFFT_Gflops': 'Gflop/s',
    'SingleFFT_Gflops': 'Gflop/s',
    'StarRandomAccess_GUPs': 'GUP/s',
    'SingleRandomAccess_GUPs': 'GUP/s',
    'MinPingPongLatency_usec': 'us',
    'MaxPingPongLatency_usec': 'us',
    'MinPingPongBandwidth_GBytes': 'GB/s',
    'MaxPingPongBandwidth_GBytes': 'GB/s',
    'NaturallyOrderedRingLatency_usec': 'us',
    'RandomlyOrderedRingLatency_usec': 'us',
    'NaturallyOrderedRingBandwidth_GBytes': 'GB/s',
    'RandomlyOrderedRingBandwidth_GBytes': 'GB/s',
}
# Run parameters kept in details.
PARAMETERS = ('CommWorldProcs', 'HPL_N', 'HPL_NB', 'HPL_nprow', 'HPL_npcol',
              'PTRANS_n', 'PTRANS_nb', 'STREAM_VectorSize', 'STREAM_Threads',
              'FFT_N', 'MPIFFT_N', 'DGEMM_N', 'HPL_time')

_BANNER = re.compile(r'HPC Challenge|DARPA/DOE|^Begin of \w+ section', re.M)
_BEGIN = 'Begin of Summary section.'
_END = 'End of Summary section.'
_FAILED_CHECKS = re.compile(
    r'^(.*\bFAILED\b.*|.*\(failed\).*|.*Failed Validation.*|'
    r'\s*[1-9]\d* tests completed and failed residual checks.*)$', re.M)


def _summary(text: str) -> tuple[dict, str | None]:
    """The last Summary section as a dict, or a reason why there is none."""
    begin = text.rfind(_BEGIN)
    if begin < 0:
        if not _BANNER.search(text):
            return {}, ('not hpcc output (no HPC Challenge banner or '
                        'sections)')
        return {}, ('no Summary section: hpcc was cut before its end '
                    '(truncated hpccoutf.txt)')
    end = text.find(_END, begin)
    if end < 0:
        return {}, ('Summary section cut before its end (truncated '
                    'hpccoutf.txt)')
    pairs = {}
    for line in text[begin + len(_BEGIN):end].splitlines():
        key, sep, value = line.partition('=')
        if sep:
            pairs[key.strip()] = value.strip()
    return pairs, None


def _number(value: str):
    number = to_float(value)
    if number is None:
        return value
    return int(number) if number.is_integer() and '.' not in value and \
        'e' not in value.lower() else number


def parse(text: str, ranks: int | None = None):
    """``ranks``: how many MPI processes the run must show (CommWorldProcs);
    None accepts any."""
    text = (text or '').replace('\r', '')
    if not text.strip():
        return failure(TOOL, 'empty output: hpcc wrote no results '
                             '(it writes them to hpccoutf.txt)')
    summary, reason = _summary(text)
    if reason:
        abort = mpi_abort(text)
        return failure(TOOL, f'MPI abort: {abort}' if abort else reason)

    details = {name: _number(summary[name]) for name in PARAMETERS
               if name in summary}
    details['version'] = '.'.join(summary.get(part, '?') for part in
                                  ('VersionMajor', 'VersionMinor',
                                   'VersionMicro'))
    details['runs_in_file'] = text.count(_BEGIN)

    missing = [name for name in ('Success', *REQUIRED) if name not in summary]
    if missing:
        return failure(TOOL, f"Summary section lacks {', '.join(missing)}",
                       details=details)

    procs = details.get('CommWorldProcs')
    if ranks is not None and procs != ranks:
        return failure(TOOL, f'hpcc ran on {procs} MPI processes, expected '
                             f'{ranks} (wrong task count)', details=details)

    # Only the last run's sections count when the file holds several.
    last_run = text[:text.rfind(_BEGIN)]
    previous_end = last_run.rfind(_END)
    failed = _FAILED_CHECKS.search(last_run[previous_end + 1:])
    if summary.get('Success') != '1':
        cause = f': {failed.group(1).strip()}' if failed else ''
        return failure(TOOL, f"hpcc reports Success={summary.get('Success')}"
                             f'{cause}', details=details)
    if failed:
        return failure(TOOL, f'hpcc check failed: {failed.group(1).strip()}',
                       details=details)

    metrics, not_measured = {}, []
    for name, unit in {**REQUIRED, **EXTRA}.items():
        value = to_float(summary.get(name, ''))
        if value is None:
            continue
        if value < 0:
            not_measured.append(name)
            continue
        metrics[name] = Metric(value, unit)
    unreadable = [name for name in REQUIRED
                  if name not in metrics and name not in not_measured]
    if unreadable:
        return failure(TOOL, f"unreadable value for {', '.join(unreadable)}",
                       details=details)
    if not_measured:
        details['not_measured'] = not_measured
    return success(TOOL, metrics, details)
