"""gpu_burn (wilicc/gpu-burn): GEMM rate, compute errors and temperature of
every GPU under a burn of all GPUs at once.

Metrics per GPU i, from gpu_burn's last progress record (each says, per
GPU, how many GEMMs it has done with their rate, the errors its compare
kernel counted, and the temperature): ``gflops_gpu<i>`` (Gflop/s),
``errors_gpu<i>`` (count) and ``temp_gpu<i>`` (C). ``details['verdicts']``
holds gpu_burn's own ``GPU i: OK|FAULTY`` lines.

gpu_burn exits 0 even when it calls a GPU FAULTY (wilicc/gpu-burn issue 12,
https://github.com/wilicc/gpu-burn/issues/12), so the text decides. The
output fails, naming the GPUs, when a GPU is FAULTY or counted an error
(negative counts included: issue 12 shows them), when a GPU did no work in
the last record while another did, or had no rate at all, when no progress
record was printed (gpu_burn then still says OK: issue 124,
https://github.com/wilicc/gpu-burn/issues/124), and when the closing
``Tested N GPUs:`` summary is missing (the run was cut short). Progress
records are separated by carriage returns or run together on one line;
they are split on ``proc'd:`` and read token by token (linear time).
"""
from __future__ import annotations

import re

from .base import Metric, ParseResult, failure, success

TOOL = 'gpu-burn'

_MARK = "proc'd:"
_TESTED = re.compile(r'^Tested (\d+) GPUs:\s*$')
_VERDICT = re.compile(r'^GPU (\d+): (OK|FAULTY)\s*$')
_DEVICE = re.compile(r'^GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)\s*$')
_MODE = re.compile(r'using (FLOATS|DOUBLES)(, using Tensor Cores)?')
_SECONDS = re.compile(r'^Burning for (\d+) seconds')


def _int(token: str) -> int | None:
    body = token[1:] if token.startswith('-') else token
    return int(token) if body.isdigit() and len(body) < 20 else None


def _rate(token: str) -> float | None:
    """'(7150' -> 7150.0"""
    body = token[1:]
    if not token.startswith('(') or not body or len(body) > 30:
        return None
    try:
        return float(body)
    except ValueError:
        return None


def _record(body: str) -> dict:
    """One progress record (the text after "proc'd:"): per GPU, GEMMs done
    and their rate, errors, temperature."""
    work_part, _, rest = body.partition('errors:')
    errors_part, _, temps_part = rest.partition('temps:')
    work, tokens = [], work_part.split()
    for i in range(len(tokens) - 2):
        done, rate = _int(tokens[i]), _rate(tokens[i + 1])
        if done is not None and rate is not None and \
                tokens[i + 2] == 'Gflop/s)':
            work.append((done, rate))
    errors = [value for value in map(
        _int, errors_part.replace('(WARNING!)', ' ').split())
        if value is not None]
    tokens = temps_part.split()
    temps = [_int(tokens[i]) for i in range(len(tokens) - 1)
             if tokens[i + 1] == 'C' and _int(tokens[i]) is not None]
    return {'work': work, 'errors': errors, 'temps': temps}


def parse(text: str) -> ParseResult:
    last: dict | None = None
    records = 0
    tested = None
    verdicts: dict[int, str] = {}
    devices: dict[str, dict] = {}
    details: dict = {}
    for line in re.split(r'[\r\n]', text):
        if _MARK in line:
            for body in line.split(_MARK)[1:]:
                record = _record(body)
                if record['work']:
                    last, records = record, records + 1
            continue
        stripped = line.strip()
        match = _TESTED.match(stripped)
        if match:
            tested = int(match.group(1))
            continue
        match = _VERDICT.match(stripped)
        if match and tested is not None:
            verdicts[int(match.group(1))] = match.group(2)
            continue
        match = _DEVICE.match(stripped)
        if match:
            devices[match.group(1)] = {'name': match.group(2),
                                       'uuid': match.group(3)}
            continue
        match = _MODE.search(stripped)
        if match and 'mode' not in details:
            details['mode'] = match.group(1).lower() + (
                '+tensor_cores' if match.group(2) else '')
        match = _SECONDS.match(stripped)
        if match:
            details['seconds'] = int(match.group(1))
    if last is None and tested is None:
        return failure(TOOL, "not gpu-burn output: no progress record "
                             "(\"proc'd:\") and no 'Tested N GPUs:' summary")
    details.update({'devices': devices, 'progress_records': records,
                    'verdicts': {str(gpu): verdict
                                 for gpu, verdict in sorted(verdicts.items())}})
    metrics: dict[str, Metric] = {}
    problems: list[str] = []
    if last is not None:
        for gpu, (done, rate) in enumerate(last['work']):
            metrics[f'gflops_gpu{gpu}'] = Metric(rate, 'Gflop/s')
        for gpu, count in enumerate(last['errors']):
            metrics[f'errors_gpu{gpu}'] = Metric(float(count), 'count')
            if count:
                problems.append(f'GPU {gpu}: {count} compute errors')
        for gpu, temp in enumerate(last['temps']):
            metrics[f'temp_gpu{gpu}'] = Metric(float(temp), 'C')
        busy = [gpu for gpu, (done, rate) in enumerate(last['work'])
                if done > 0 and rate > 0]
        idle = [gpu for gpu, (done, rate) in enumerate(last['work'])
                if gpu not in busy]
        if idle:
            problems.append(
                'GPU ' + ', '.join(map(str, idle)) + ' did no work'
                + (' while ' + ', '.join(map(str, busy)) + ' ran'
                   if busy else ''))
    faulty = [gpu for gpu, verdict in sorted(verdicts.items())
              if verdict == 'FAULTY']
    if faulty:
        problems.insert(0, 'gpu_burn calls GPU '
                        + ', '.join(map(str, faulty)) + ' FAULTY')
    if last is None:
        problems.append('no progress record: gpu_burn measured nothing '
                        '(its OK then means nothing)')
    if tested is None:
        problems.append("no 'Tested N GPUs:' summary: the run was cut short")
    elif last is not None and len(last['work']) != tested:
        problems.append(f'gpu_burn tested {tested} GPUs but its last '
                        f"progress record shows {len(last['work'])}")
    elif len(verdicts) != tested:
        problems.append(f'gpu_burn tested {tested} GPUs but gave '
                        f'{len(verdicts)} verdicts')
    if problems:
        return failure(TOOL, '; '.join(problems), metrics, details)
    return success(TOOL, metrics, details)
