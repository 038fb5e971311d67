"""IOR: write/read bandwidth from the *Summary of all tests* (Mean MiB/s).

Handles the text summary of IOR 3.2 through 4.x, the JSON summary
(``-O summaryFormat=JSON``, 3.2.1 prints a banner before the JSON) and the
CSV summary (``-O summaryFormat=CSV``, per-iteration rows only).
"""
from __future__ import annotations

import re
from statistics import mean

from .base import Metric, failure, mpi_abort, success, to_float

TOOL = 'ior'
UNIT = 'MiB/s'
METRIC = {'write': 'write_bandwidth_mib', 'read': 'read_bandwidth_mib'}

_ERROR = re.compile(r'^(?:ior )?ERROR[:\s].*$', re.MULTILINE)
_DATA_CHECK = re.compile(r'^WARNING: Incorrect data on (?:read|write).*$',
                         re.MULTILINE)
_RESULT_ROW = re.compile(r'^(write|read)\s+\d', re.MULTILINE)
_VERSION = re.compile(r'IOR-(\S+): MPI Coordinated Test')


def _summary_rows(text: str) -> tuple[dict[str, dict[str, str]], str | None]:
    """Rows of the text summary keyed by operation, or a reason."""
    head, sep, tail = text.partition('Summary of all tests:')
    if not sep:
        return {}, None
    lines = [ln for ln in tail.splitlines() if ln.strip()]
    if not lines or not lines[0].startswith('Operation'):
        return {}, "the 'Summary of all tests' block has no header row"
    columns = lines[0].split()
    rows = {}
    for line in lines[1:]:
        fields = line.split()
        if fields[0] not in METRIC:
            break
        rows[fields[0]] = dict(zip(columns, fields))
    return rows, None


def _from_text_summary(text: str):
    rows, problem = _summary_rows(text)
    if problem:
        return None, problem
    if not rows:
        return None, None
    metrics, details = {}, {'format': 'text', 'summary': rows}
    for op, row in rows.items():
        value = to_float(row.get('Mean(MiB)'))
        if value is None:
            return None, f'summary row {op!r} has no Mean(MiB) value'
        metrics[METRIC[op]] = Metric(value, UNIT)
        seconds = to_float(row.get('Mean(s)'))
        if seconds is not None:
            # what the phase moved: its mean rate times its mean time (with
            # a stonewall, less than the size asked for, aggs(MiB))
            details.setdefault('data_mib', {})[op] = round(value * seconds, 2)
    # An operation measured in the Results table must be summarised too.
    measured = set(_RESULT_ROW.findall(text.partition('Summary of all')[0]))
    missing = sorted(measured - rows.keys())
    if missing:
        return None, (f"the 'Summary of all tests' block has no "
                      f"{' or '.join(missing)} row: output truncated")
    return (metrics, details), None


_JSON_PAIR = re.compile(r'"(operation|bwMeanMIB)"\s*:\s*"?([^",\s]+)"?')


def _from_json_summary(text: str):
    # Read key/value pairs in order rather than the document: IOR 3.2.1
    # prints a banner first and misplaces braces inside its JSON summary.
    _, sep, tail = text.partition('"summary"')
    if not sep:
        return None, None
    body, closed, _ = tail.partition(']')
    if not closed:
        return None, 'the JSON summary is incomplete: output truncated'
    metrics, operation = {}, None
    for key, value in _JSON_PAIR.findall(body):
        if key == 'operation':
            operation = value
        elif operation in METRIC and to_float(value) is not None:
            metrics[METRIC[operation]] = Metric(to_float(value), UNIT)
    if not metrics:
        return None, 'the JSON summary has no write or read bandwidth'
    return (metrics, {'format': 'json'}), None


def _from_csv_summary(text: str):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    header_at = next((i for i, ln in enumerate(lines)
                      if ln.startswith('access,bw(MiB/s)')), None)
    if header_at is None:
        return None, None
    columns = lines[header_at].split(',')
    samples: dict[str, list[float]] = {}
    for line in lines[header_at + 1:]:
        row = dict(zip(columns, line.split(',')))
        value = to_float(row.get('bw(MiB/s)'))
        if row.get('access') in METRIC and value is not None:
            samples.setdefault(row['access'], []).append(value)
    if not samples:
        return None, 'the CSV summary has no write or read rows'
    metrics = {METRIC[op]: Metric(mean(values), UNIT)
               for op, values in samples.items()}
    return (metrics, {'format': 'csv', 'iterations': samples}), None


def parse(text: str):
    errors = _ERROR.findall(text)
    if errors:
        return failure(TOOL, f'ior reported an error: {errors[0].strip()}')
    data_errors = _DATA_CHECK.findall(text)
    if data_errors:
        return failure(TOOL, f'ior data check failed: {data_errors[0]}')
    abort = mpi_abort(text)
    if abort:
        return failure(TOOL, f'the MPI job aborted: {abort}')
    if 'mdtest' in text[:200] and 'SUMMARY rate' in text:
        return failure(TOOL, 'this is mdtest output, not ior')

    for reader in (_from_text_summary, _from_json_summary, _from_csv_summary):
        found, problem = reader(text)
        if problem:
            return failure(TOOL, problem)
        if found:
            metrics, details = found
            version = _VERSION.search(text)
            if version and not details.get('version'):
                details['version'] = version.group(1)
            return success(TOOL, metrics, details)

    if _RESULT_ROW.search(text):
        return failure(TOOL, "no 'Summary of all tests' block after the "
                             "results table: output truncated")
    if not text.strip():
        return failure(TOOL, 'empty output')
    return failure(TOOL, "not ior output: no ior results found (no 'Summary "
                         "of all tests', JSON or CSV summary)")
