"""DCGM's active diagnostics, ``dcgmi diag -r LEVEL [-j]``: one result per
plugin (test) and GPU, with the ``DCGM_FR_*`` code and message of each
warning.

Three forms are read (DCGM docs, dcgmi diag:
https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html):

- DCGM 4.x JSON (``-j``): ``{"DCGM Diagnostic": {"test_categories": [{
  "category", "tests": [{"name", "results": [{"entity_group": "GPU",
  "entity_id", "status", "warnings": [{"error_id", "warning"}]}]}]}]},
  "entity_groups": [...], "metadata": {"version", ...}}``; a test element
  alone (as issues quote one) is read too, and is cut short;
- the human table of DCGM 3.x: one row per plugin, ``Pass - All``,
  ``Fail - GPU: 0``, ``Pass - GPUs: 1, 2``, then ``Warning`` / ``Info``
  rows whose text wraps at 45 characters (mid-word);
- the human table of DCGM 4.x: one row per plugin with its overall result,
  then ``GPU0: Pass`` rows, one per GPU.

The human table prints no code: a warning's code is found from its words,
which are the message formats of DCGM's dcgmlib/dcgm_errors.h (NVIDIA/DCGM,
commit 18b87c715750d0d44b185dfeb9a7d8e2597443a4); JSON gives the number,
named from the same file's enum.

What a result means for a node (checks/gpu/diag.py judges it):
- ``fail`` on a GPU: that GPU is bad;
- ``internal``: the plugin failed with an internal error of the test (a
  child process that crashed, output DCGM could not parse): a finding for
  the node's test, never a GPU named bad;
- a plugin ``skip`` on every GPU was not measured, never a pass (``ok``
  is False when every plugin beyond Deployment was skipped).

``ok`` is False when the text is not dcgmi's, when it is cut short (no
closing border of the table, or a JSON document that does not close), or
when a plugin failed; the results read are in ``details`` all the same.
Reads each line once.
"""
from __future__ import annotations

import json
import re

from .base import Metric, failure, success

TOOL = 'dcgmi'

PASS, FAIL, SKIP, WARN, INTERNAL = 'pass', 'fail', 'skip', 'warn', 'internal'
_STATUS = {'pass': PASS, 'fail': FAIL, 'skip': SKIP, 'warn': WARN,
           'warning': WARN, 'error': FAIL, 'not run': SKIP}

#: dcgmError_t of dcgmlib/dcgm_errors.h (NVIDIA/DCGM commit 18b87c71...):
#: the codes a diagnostic warning names, by number.
FR_CODES = {
    0: 'DCGM_FR_OK', 1: 'DCGM_FR_UNKNOWN', 2: 'DCGM_FR_UNRECOGNIZED',
    3: 'DCGM_FR_PCI_REPLAY_RATE', 4: 'DCGM_FR_VOLATILE_DBE_DETECTED',
    5: 'DCGM_FR_VOLATILE_SBE_DETECTED', 6: 'DCGM_FR_PENDING_PAGE_RETIREMENTS',
    7: 'DCGM_FR_RETIRED_PAGES_LIMIT', 8: 'DCGM_FR_RETIRED_PAGES_DBE_LIMIT',
    9: 'DCGM_FR_CORRUPT_INFOROM', 10: 'DCGM_FR_CLOCK_THROTTLE_THERMAL',
    11: 'DCGM_FR_POWER_UNREADABLE', 12: 'DCGM_FR_CLOCK_THROTTLE_POWER',
    13: 'DCGM_FR_NVLINK_ERROR_THRESHOLD', 14: 'DCGM_FR_NVLINK_DOWN',
    15: 'DCGM_FR_NVSWITCH_FATAL_ERROR', 16: 'DCGM_FR_NVSWITCH_NON_FATAL_ERROR',
    18: 'DCGM_FR_NO_ACCESS_TO_FILE', 20: 'DCGM_FR_DEVICE_COUNT_MISMATCH',
    21: 'DCGM_FR_BAD_PARAMETER', 22: 'DCGM_FR_CANNOT_OPEN_LIB',
    23: 'DCGM_FR_DENYLISTED_DRIVER', 25: 'DCGM_FR_GRAPHICS_PROCESSES',
    27: 'DCGM_FR_FIELD_QUERY', 28: 'DCGM_FR_BAD_CUDA_ENV',
    29: 'DCGM_FR_PERSISTENCE_MODE', 30: 'DCGM_FR_LOW_BANDWIDTH',
    31: 'DCGM_FR_HIGH_LATENCY', 33: 'DCGM_FR_FIELD_VIOLATION',
    34: 'DCGM_FR_FIELD_THRESHOLD', 40: 'DCGM_FR_THERMAL_VIOLATIONS',
    41: 'DCGM_FR_THERMAL_VIOLATIONS_TS', 42: 'DCGM_FR_TEMP_VIOLATION',
    43: 'DCGM_FR_THROTTLING_VIOLATION', 44: 'DCGM_FR_INTERNAL',
    45: 'DCGM_FR_PCIE_GENERATION', 46: 'DCGM_FR_PCIE_WIDTH',
    47: 'DCGM_FR_ABORTED', 48: 'DCGM_FR_TEST_DISABLED',
    49: 'DCGM_FR_CANNOT_GET_STAT', 50: 'DCGM_FR_STRESS_LEVEL',
    51: 'DCGM_FR_CUDA_API', 52: 'DCGM_FR_FAULTY_MEMORY',
    54: 'DCGM_FR_CUDA_UNBOUND', 55: 'DCGM_FR_ECC_DISABLED',
    56: 'DCGM_FR_MEMORY_ALLOC', 57: 'DCGM_FR_CUDA_DBE',
    58: 'DCGM_FR_MEMORY_MISMATCH', 59: 'DCGM_FR_CUDA_DEVICE',
    60: 'DCGM_FR_ECC_UNSUPPORTED', 62: 'DCGM_FR_MEMORY_BANDWIDTH',
    63: 'DCGM_FR_TARGET_POWER', 64: 'DCGM_FR_API_FAIL',
    65: 'DCGM_FR_API_FAIL_GPU', 66: 'DCGM_FR_CUDA_CONTEXT',
    67: 'DCGM_FR_DCGM_API', 68: 'DCGM_FR_CONCURRENT_GPUS',
    70: 'DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD',
    71: 'DCGM_FR_NVLINK_ERROR_CRITICAL', 72: 'DCGM_FR_ENFORCED_POWER_LIMIT',
    73: 'DCGM_FR_MEMORY_ALLOC_HOST', 77: 'DCGM_FR_HAD_TO_RESTORE_STATE',
    79: 'DCGM_FR_L1TAG_MISCOMPARE', 80: 'DCGM_FR_ROW_REMAP_FAILURE',
    81: 'DCGM_FR_UNCONTAINED_ERROR', 82: 'DCGM_FR_EMPTY_GPU_LIST',
    83: 'DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS',
    84: 'DCGM_FR_UNCORRECTABLE_ROW_REMAP', 85: 'DCGM_FR_PENDING_ROW_REMAP',
    86: 'DCGM_FR_BROKEN_P2P_MEMORY_DEVICE',
    87: 'DCGM_FR_BROKEN_P2P_WRITER_DEVICE', 95: 'DCGM_FR_EUD_TEST_FAILED',
    98: 'DCGM_FR_PCIE_H_REPLAY_VIOLATION',
    99: 'DCGM_FR_GPU_EXPECTED_NVLINKS_UP', 101: 'DCGM_FR_XID_ERROR',
    103: 'DCGM_FR_DBE_VIOLATION', 104: 'DCGM_FR_PCIE_REPLAY_VIOLATION',
    108: 'DCGM_FR_CUDA_FM_NOT_INITIALIZED', 109: 'DCGM_FR_SXID_ERROR',
    110: 'DCGM_FR_GFLOPS_THRESHOLD_VIOLATION', 111: 'DCGM_FR_NAN_VALUE',
}
INTERNAL_CODE = 'DCGM_FR_INTERNAL'
#: The words of a message -> its code, from the *_MSG formats of
#: dcgm_errors.h (same commit); first match wins.
_MESSAGE_CODES = [(re.compile(pattern), code) for pattern, code in (
    (r"There was an internal error during the test", INTERNAL_CODE),
    (r'Error using CUDA API', 'DCGM_FR_CUDA_API'),
    (r'Thermal violations totaling .* started at', 'DCGM_FR_THERMAL_VIOLATIONS_TS'),
    (r'thermal violations totaling', 'DCGM_FR_THERMAL_VIOLATIONS'),
    (r'Persistence mode for GPU \d+ is disabled', 'DCGM_FR_PERSISTENCE_MODE'),
    (r'row remappings are pending', 'DCGM_FR_PENDING_ROW_REMAP'),
    (r'row remapping failed', 'DCGM_FR_ROW_REMAP_FAILURE'),
    (r"NvLink link \d+ is currently down", 'DCGM_FR_NVLINK_DOWN'),
    (r'NvLinks are up out of the expected', 'DCGM_FR_GPU_EXPECTED_NVLINKS_UP'),
    (r'only achieved a memory bandwidth', 'DCGM_FR_MEMORY_BANDWIDTH'),
    (r'did not reach desired power minimum', 'DCGM_FR_TARGET_POWER'),
    (r'did not reach desired stress level', 'DCGM_FR_STRESS_LEVEL'),
    (r'faulty memory elements', 'DCGM_FR_FAULTY_MEMORY'),
    (r'PCI link generation', 'DCGM_FR_PCIE_GENERATION'),
    (r'PCI link width', 'DCGM_FR_PCIE_WIDTH'),
    (r'did not exceed minimum required bandwidth', 'DCGM_FR_LOW_BANDWIDTH'),
    (r'double-bit ECC error', 'DCGM_FR_VOLATILE_DBE_DETECTED'),
    (r'Detected XID \d+', 'DCGM_FR_XID_ERROR'),
    (r'fabricmanager is not initialized', 'DCGM_FR_CUDA_FM_NOT_INITIALIZED'),
)]
#: An internal error of the test itself (DCGM_FR_INTERNAL's message, a
#: crashed or unreadable child process): the node's test, not its GPU.
_INTERNAL = re.compile(r'internal error during the test|A child process '
                       r'\(\d+\) exited|Output of child process .* '
                       r"couldn't be parsed", re.I)
_GPU_IN_MESSAGE = re.compile(r'\bGPU\s*(\d+)\b')
_SECTION = re.compile(r'^[|+]-+\s+(\w[\w ]*?)\s+-+\+')
_BORDER = re.compile(r'^\+[-=]+\+[-=]+\+\s*$')
_GPU_ROW = re.compile(r'^GPU\s*(\d+)\s*:\s*(\w[\w ]*?)\s*$')
_LIST_STATUS = re.compile(r'^(Pass|Fail|Skip|Warn\w*)\s*-\s*(All|GPUs?:'
                          r'\s*([\d,\s]+))\s*$', re.I)
_METADATA_KEYS = {'DCGM Version': 'dcgm_version',
                  'Driver Version Detected': 'driver_version',
                  'GPU Device IDs Detected': 'device_ids'}
_MESSAGE_KINDS = ('Warning', 'Info', 'Error')
_LEFT_WIDTH = 27          # '| ' + 25 characters + ' |' (dcgmi's 78 columns)
_RIGHT_TEXT = 45          # characters of text a right cell holds a line


def code_of(message: str, error_id=None) -> str | None:
    """The DCGM_FR_* name of a warning: its number where JSON gives one,
    else the message format its words match; None when neither tells."""
    if isinstance(error_id, int) and error_id in FR_CODES:
        return FR_CODES[error_id]
    for pattern, code in _MESSAGE_CODES:
        if pattern.search(message):
            return code
    return None


def _status(text: str) -> str | None:
    return _STATUS.get(text.strip().lower())


def _result(category, plugin, gpu, status, messages=()) -> dict:
    return {'category': category, 'plugin': plugin, 'gpu': gpu,
            'status': status, 'code': None, 'message': '',
            'messages': list(messages)}


class _Plugin:
    """One plugin of the human table: its overall status, per-GPU
    statuses, and its messages (kind, text)."""

    def __init__(self, category: str, name: str, status_text: str):
        self.category, self.name = category, name
        self.overall: str | None = None
        self.all_gpus: str | None = None
        self.gpus: dict[int, str] = {}
        self.messages: list[list] = []   # [kind, [pieces]]
        self.status_line(status_text)

    def status_line(self, text: str) -> bool:
        listed = _LIST_STATUS.match(text.strip())
        if listed:
            status = _status(listed.group(1)) or WARN
            if listed.group(2).lower() == 'all':
                self.all_gpus = status
            else:
                for gpu in re.findall(r'\d+', listed.group(3)):
                    self.gpus[int(gpu)] = status
            self.overall = self.overall or status
            if status == FAIL:
                self.overall = FAIL
            return True
        status = _status(text)
        if status and self.overall is None:
            self.overall = status
            return True
        return False


def _cells(line: str) -> tuple[str, str] | None:
    """(left, right) cells of a table row; None for anything else."""
    if not line.startswith('|') or len(line) < _LEFT_WIDTH + 2:
        return None
    if line[_LEFT_WIDTH + 1] == '|':
        left, right = line[1:_LEFT_WIDTH + 1], line[_LEFT_WIDTH + 2:]
    else:
        parts = line[1:].split('|', 1)
        if len(parts) < 2:
            return None
        left, right = parts
    if right.endswith('|'):
        right = right[:-1]
    return left.strip(), right[1:1 + _RIGHT_TEXT]


def _human(lines: list[str]) -> tuple[list[_Plugin], dict, bool, bool]:
    """The plugins of a human table, its metadata, whether a table was
    seen and whether it closed (its last border after the last row)."""
    plugins: list[_Plugin] = []
    metadata: dict = {}
    category, current, message = '', None, None
    seen, closed = False, False
    for raw in lines:
        line = raw.rstrip('\r\n')
        stripped = line.rstrip()
        section = _SECTION.match(stripped)
        if section:
            category, current, message = section.group(1).strip(), None, None
            seen, closed = True, False
            continue
        if _BORDER.match(stripped):
            seen, closed = True, True
            continue
        cells = _cells(stripped)
        if cells is None:
            continue
        left, right = cells
        if left == 'Diagnostic' and right.strip() == 'Result':
            if closed and plugins:
                # the whole result printed again: the last table counts
                plugins, metadata, current, message = [], {}, None, None
            seen, closed = True, False
            continue
        if not seen and not (left and stripped[_LEFT_WIDTH + 1] == '|' and (
                _status(right) or _LIST_STATUS.match(right.strip()))):
            # before any border, heading or section, only a plugin row of
            # dcgmi's layout ('| GPU Memory | Pass - All |') starts a table
            continue
        seen, closed = True, False
        if category == 'Metadata':
            if left in _METADATA_KEYS:
                metadata[_METADATA_KEYS[left]] = right.strip()
            continue
        if left in _MESSAGE_KINDS:
            if current is None:      # an Error row before any plugin
                current = _Plugin(category, category, '')
                plugins.append(current)
            message = [left, [right]]
            current.messages.append(message)
            continue
        if left:
            current = _Plugin(category, left, right)
            plugins.append(current)
            message = None
            continue
        if current is None:
            continue
        per_gpu = _GPU_ROW.match(right.strip())
        if per_gpu and _status(per_gpu.group(2)):
            current.gpus[int(per_gpu.group(1))] = _status(per_gpu.group(2))
            message = None
        elif message is None and current.status_line(right):
            pass
        elif message is not None:
            message[1].append(right)
    return plugins, metadata, seen, closed


def _message_text(pieces: list[str]) -> str:
    return ' '.join(''.join(pieces).split())


def _gpu_count(metadata: dict) -> int | None:
    ids = [i for i in re.split(r'[,\s]+', metadata.get('device_ids', ''))
           if i]
    return len(ids) or None


def _results_of(plugin: _Plugin, gpus: int | None) -> list[dict]:
    """One result per GPU of a human-table plugin."""
    messages = [(kind, _message_text(pieces))
                for kind, pieces in plugin.messages]
    statuses = dict(plugin.gpus)
    if plugin.all_gpus and gpus:
        for gpu in range(gpus):
            statuses.setdefault(gpu, plugin.all_gpus)
    if plugin.overall is None and plugin.messages and \
            plugin.messages[0][0] == 'Error':
        plugin.overall = FAIL
    if not statuses and plugin.overall == FAIL:
        # a failed row without per-GPU results (an 'Error' row): the GPUs
        # its failure messages name
        for kind, text in messages:
            named = _GPU_IN_MESSAGE.match(text)
            if kind != 'Info' and named and not _INTERNAL.search(text):
                statuses[int(named.group(1))] = FAIL
    found = [_result(plugin.category, plugin.name, gpu, status)
             for gpu, status in sorted(statuses.items())]
    if not found:   # no GPU named: the plugin's own result
        found = [_result(plugin.category, plugin.name, None,
                         plugin.all_gpus or plugin.overall or WARN)]
    _attach(found, messages, plugin.overall)
    return found


def _attach(found: list[dict], messages, overall) -> None:
    """Put each warning on the result of its GPU (the GPU its words name,
    else every result of the plugin); a plugin failed only by internal
    errors of the test says so instead of naming a GPU."""
    by_gpu = {r['gpu']: r for r in found}
    internal = []
    for kind, text in messages:
        code = code_of(text)
        if kind in ('Warning', 'Error') and (
                code == INTERNAL_CODE or _INTERNAL.search(text)):
            internal.append(text)
            continue
        named = _GPU_IN_MESSAGE.match(text) or _GPU_IN_MESSAGE.search(text)
        target = by_gpu.get(int(named.group(1))) if named else None
        for result in [target] if target else found:
            result['messages'].append({'kind': kind, 'code': code,
                                       'text': text})
    if internal:
        failed_gpus = [r for r in found
                       if r['status'] == FAIL and r['gpu'] is not None]
        holder = found[0]
        if overall == FAIL and not failed_gpus:
            # failed by the test's own errors alone: no GPU is named bad
            holder = next((r for r in found if r['gpu'] is None), None)
            if holder is None:
                holder = _result(found[0]['category'], found[0]['plugin'],
                                 None, INTERNAL)
                found.append(holder)
            holder['status'] = INTERNAL
        for text in internal:
            holder['messages'].append({'kind': 'Warning',
                                       'code': INTERNAL_CODE, 'text': text})
    for result in found:
        _summarise(result)


def _summarise(result: dict) -> None:
    """The result's code and message: its first warning (an error first),
    the info lines otherwise."""
    warnings = [m for m in result['messages'] if m['kind'] != 'Info']
    chosen = warnings or ([] if result['status'] == PASS else
                          result['messages'])
    if chosen:
        result['code'] = chosen[0]['code']
        result['message'] = '; '.join(m['text'] for m in chosen)


# JSON -------------------------------------------------------------------

def _json_document(text: str):
    """The JSON value in the text (after any prompt lines), and whether it
    is complete; None when there is none."""
    start = min([i for i in (text.find('{'), text.find('[')) if i >= 0],
                default=-1)
    if start < 0:
        return None, False
    body = text[start:].strip()
    try:
        return json.loads(body), True
    except ValueError:
        pass
    # an element of a list quoted alone: '{ ... },'
    trimmed = body.rstrip().rstrip(',')
    try:
        return json.loads(trimmed), False
    except ValueError:
        return None, False


def _gpus_of(result: dict) -> list[int | None]:
    if 'entity_id' in result:
        if str(result.get('entity_group', 'GPU')).upper() != 'GPU':
            return []
        return [int(result['entity_id'])]
    for key in ('gpu_ids', 'gpu_id'):
        if key in result:
            return [int(g) for g in re.findall(r'\d+', str(result[key]))]
    return [None]


def _json_test(category: str, test: dict) -> list[dict]:
    found = []
    name = str(test.get('name', '?'))
    summary = test.get('test_summary') or {}
    for result in test.get('results') or []:
        if not isinstance(result, dict):
            continue
        status = _status(str(result.get('status', ''))) or WARN
        for gpu in _gpus_of(result):
            entry = _result(category, name, gpu, status)
            for warning in result.get('warnings') or []:
                if not isinstance(warning, dict):
                    continue
                text = ' '.join(str(warning.get('warning', '')).split())
                entry['messages'].append({
                    'kind': 'Warning', 'text': text,
                    'code': code_of(text, warning.get('error_id'))})
            for info in result.get('info') or []:
                entry['messages'].append({'kind': 'Info', 'code': None,
                                          'text': str(info)})
            found.append(entry)
    if not found:
        status = _status(str(summary.get('status', ''))) or WARN
        found.append(_result(category, name, None, status))
    internal = [m for r in found for m in r['messages']
                if m['code'] == INTERNAL_CODE or _INTERNAL.search(m['text'])]
    for result in found:
        if result['status'] == FAIL and result['messages'] and all(
                m in internal for m in result['messages']
                if m['kind'] == 'Warning'):
            result['status'] = INTERNAL
        _summarise(result)
    return found


def _json_results(document) -> tuple[list[dict], dict, str | None]:
    """(results, metadata, what is missing) of a DCGM JSON document or of
    one of its test elements."""
    if isinstance(document, dict) and 'name' in document and \
            'results' in document:
        return _json_test('', document), {}, \
            'one test of the JSON document (its header and other tests ' \
            'are missing)'
    if not isinstance(document, dict):
        return [], {}, 'no "DCGM Diagnostic" object'
    body = document.get('DCGM Diagnostic') or \
        document.get('DCGM GPU Diagnostic')
    if not isinstance(body, dict):
        return [], {}, 'no "DCGM Diagnostic" object'
    results = []
    for category in body.get('test_categories') or []:
        if not isinstance(category, dict):
            continue
        for test in category.get('tests') or []:
            if isinstance(test, dict):
                results += _json_test(str(category.get('category', '')), test)
    meta = document.get('metadata') or {}
    metadata = {'dcgm_version': meta.get('version') or body.get('version'),
                'driver_version': meta.get('Driver Version Detected')}
    serials = {}
    for group in document.get('entity_groups') or []:
        for entity in (group or {}).get('entities') or []:
            if isinstance(entity, dict) and 'entity_id' in entity:
                serials[int(entity['entity_id'])] = {
                    'device_id': entity.get('device_id'),
                    'serial': entity.get('serial_num')}
    if serials:
        metadata['gpus'] = serials
    return results, {k: v for k, v in metadata.items() if v}, None


# the result -------------------------------------------------------------

def _metrics(results: list[dict]) -> dict[str, Metric]:
    plugins: dict[str, set] = {}
    for result in results:
        plugins.setdefault(result['plugin'], set()).add(result['status'])
    failed_gpus = {r['gpu'] for r in results
                   if r['status'] == FAIL and r['gpu'] is not None}
    return {
        'plugins_run': Metric(float(sum(1 for s in plugins.values()
                                        if s - {SKIP})), 'plugins'),
        'plugins_failed': Metric(float(sum(1 for s in plugins.values()
                                           if FAIL in s)), 'plugins'),
        'plugins_skipped': Metric(float(sum(1 for s in plugins.values()
                                            if s == {SKIP})), 'plugins'),
        'gpus_failed': Metric(float(len(failed_gpus)), 'GPUs'),
        'internal_errors': Metric(float(sum(1 for s in plugins.values()
                                            if INTERNAL in s)), 'plugins'),
    }


def describe(result: dict) -> str:
    """'GPU 0 GPU Memory fail (DCGM_FR_THERMAL_VIOLATIONS_TS): ...'"""
    where = f"GPU {result['gpu']} " if result['gpu'] is not None else ''
    code = f" ({result['code']})" if result['code'] else ''
    text = f": {result['message']}" if result['message'] else ''
    status = 'internal error of the test' if result['status'] == INTERNAL \
        else result['status']
    return f"{where}{result['plugin']} {status}{code}{text}"


def parse(text: str) -> object:
    document, complete = _json_document(text) if '"' in text else (None,
                                                                     False)
    cut = None
    if document is not None:
        form = 'json'
        results, metadata, cut = _json_results(document)
        if cut is None and not complete:
            cut = 'the JSON document does not close'
    else:
        form = 'table'
        plugins, metadata, seen, closed = _human(text.splitlines())
        if not seen or not plugins:
            return failure(TOOL, 'not dcgmi output: no dcgmi diag '
                           'table (+---+ rows of "| Diagnostic | Result |") '
                           'and no "DCGM Diagnostic" JSON')
        gpus = _gpu_count(metadata)
        results = [r for plugin in plugins for r in _results_of(plugin, gpus)]
        if not closed:
            cut = 'the table has no closing border (cut short)'
    if not results:
        return failure(TOOL, f'not dcgmi output: {cut or "no result"}')
    details = {'form': form, 'results': results, **metadata}
    metrics = _metrics(results)
    problems = [describe(r) for r in results if r['status'] in (FAIL,
                                                                 INTERNAL)]
    if cut:
        problems.insert(0, cut)
    tested = {r['status'] for r in results
              if r['category'] != 'Deployment'}
    if tested == {SKIP}:
        problems.append('every test plugin beyond the deployment checks '
                        'was skipped: nothing was measured')
    if problems:
        return failure(TOOL, '; '.join(problems), metrics, details)
    return success(TOOL, metrics, details)
