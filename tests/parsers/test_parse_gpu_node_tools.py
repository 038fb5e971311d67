"""The parsers of the GPU node checks on every public output of their tools
(tests/support/data/{dcgmi-diag,nvlink-topo,nvidia-smi-azhc}/PROVENANCE.md):
dcgmi diag (DCGM 3.x and 4.x tables, 4.x JSON), nvidia-smi nvlink -s/-e,
nvidia-smi -q. Each expected value is read by hand from the file (the line
is named); a file marked DOUBTFUL is tested to parse, not for what it
says."""
import json
import time
from pathlib import Path

import pytest

from checks import parsers
from checks.parsers import dcgmi

DATA = Path(__file__).resolve().parents[1] / 'support' / 'data'
DCGMI, NVLINK, SMI = (DATA / 'dcgmi-diag', DATA / 'nvlink-topo',
                      DATA / 'nvidia-smi-azhc')


def parse(tool, folder, name):
    return parsers.parse(tool, (folder / name).read_text(errors='replace'))


def statuses(result, plugin):
    return {r['gpu']: r['status'] for r in result.details['results']
            if r['plugin'] == plugin}


ALL_FILES = [(tool, path) for tool, folder in (
    ('dcgmi', DCGMI), ('nvlink', NVLINK), ('nvidia-smi', SMI))
    for path in sorted(folder.glob('*.out'))]


@pytest.mark.parametrize('tool,path', ALL_FILES,
                         ids=[p.name for _, p in ALL_FILES])
def test_every_file_of_the_corpus_gives_a_result_or_a_reason(tool, path):
    result = parsers.parse(tool, path.read_text(errors='replace'))
    json.dumps(result.to_json())
    assert result.ok or result.reason


# dcgmi diag: human tables ---------------------------------------------------

def test_dcgm3_pass_table_every_gpu_of_every_plugin():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-r2-human-dcgm3.3.3-8xA100-80GB-'
              'p4de-PASS.out')
    assert r.ok, r.reason
    # line 7: DCGM Version 3.3.3; line 9: eight device ids
    assert r.details['dcgm_version'] == '3.3.3'
    # line 21: 'PCIe | Pass - All' over the 8 GPUs of line 9
    assert statuses(r, 'PCIe') == {i: 'pass' for i in range(8)}
    # lines 11-19: nine deployment checks, one result each; PCIe, GPU Memory
    assert r.value('plugins_run') == 11
    assert r.value('plugins_failed') == 0


def test_dcgm3_fail_all_names_the_gpu_of_its_warning():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-r2-human-dcgm3.3.0-8xRTX3090-2204-'
              'PCIe-FAIL.out')
    assert not r.ok
    # line 21 'PCIe | Fail - All'; line 29 'GPU Memory | Skip - All'
    assert statuses(r, 'PCIe') == {i: 'fail' for i in range(8)}
    assert statuses(r, 'GPU Memory') == {i: 'skip' for i in range(8)}
    gpu0 = next(x for x in r.details['results']
                if x['plugin'] == 'PCIe' and x['gpu'] == 0)
    # lines 22-27: the warning, wrapped at 45 characters, rejoined
    assert gpu0['code'] == 'DCGM_FR_CUDA_API'
    assert gpu0['message'].startswith(
        'GPU 0 Error using CUDA API cudaDeviceGetByPCIBusId Check DCGM and '
        'system logs for errors.')
    assert gpu0['message'].endswith('for GPU 0, bus ID = 00000000:1B:00.0')
    assert r.value('plugins_skipped') == 1


def test_dcgm3_list_of_gpus_and_a_thermal_warning_cut_short():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-r2-human-GPU-Memory-FAIL-thermal-'
              'mlengineering-excerpt.out')
    # line 1 'Pass - GPUs: 1, 2, 3, 4, 5, 6, 7', line 2 'Fail - GPU: 0'
    assert statuses(r, 'GPU Memory') == {0: 'fail', **{i: 'pass'
                                                       for i in range(1, 8)}}
    gpu0 = next(
        x for x in r.details['results'] if x['gpu'] == 0)
    # lines 3-8: 'GPU 0 Thermal violations totaling 13.3 seconds started at
    # 9.7 seconds into the test for GPU 0 ...' (DCGM_FR_THERMAL_VIOLATIONS_TS)
    assert gpu0['code'] == 'DCGM_FR_THERMAL_VIOLATIONS_TS'
    assert 'totaling 13.3 seconds started at 9.7 seconds' in gpu0['message']
    assert not r.ok and 'cut short' in r.reason
    assert r.value('gpus_failed') == 1


def test_dcgm3_fail_early_cuinit_on_every_gpu():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-r3-fail-early-human-dcgm3.3.8-'
              '8xH100-GPU-Memory-FAIL-cuInit.out')
    # line 34 'GPU Memory | Fail - All', then one Warning per GPU 0-7
    assert statuses(r, 'GPU Memory') == {i: 'fail' for i in range(8)}
    memory = [x for x in r.details['results'] if x['plugin'] == 'GPU Memory']
    assert all(x['message'].startswith(f"GPU {x['gpu']} Error using CUDA "
                                       'API cuInit') for x in memory)
    # lines 32, 92, 93: PCIe, Memory Bandwidth, EUD Test 'Skip - All'
    assert r.value('plugins_skipped') == 3
    # the persistence 'Info' rows (lines 15-26) do not fail anything
    assert statuses(r, 'Persistence Mode') == {None: 'pass'}


def test_dcgm4_table_per_gpu_rows():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-r3-human-dcgm4.0.0-4xA16-25b6-PASS-'
              'nvidia-docs-example.out')
    assert r.ok, r.reason
    # lines 11-44: seven plugins, each with 'GPU0: Pass' to 'GPU3: Pass'
    assert r.value('plugins_run') == 7
    assert statuses(r, 'targeted_power') == {i: 'pass' for i in range(4)}
    one = parse('dcgmi', DCGMI, 'dcgmi-diag-r2-i0-human-dcgm4.4.2-A10G-2237-'
                'PASS.out')
    # '-i 0': line 12 'GPU0: Pass' under software
    assert one.ok and statuses(one, 'software') == {0: 'pass'}


def test_internal_errors_of_the_test_name_no_gpu():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-human-dcgm4.2.3-4xL40S-26b9-pcie-'
              'FAIL-k8s-pod.out')
    # line 23 'pcie | Fail', four Warnings 'There was an internal error
    # during the test' (child process exited / output not parseable), then
    # 'GPU0: Pass' to 'GPU3: Pass' (lines 44-47)
    assert statuses(r, 'pcie') == {0: 'pass', 1: 'pass', 2: 'pass',
                                   3: 'pass', None: 'internal'}
    assert r.value('gpus_failed') == 0 and r.value('internal_errors') == 1
    internal = next(x for x in r.details['results']
                    if x['status'] == 'internal')
    assert internal['code'] == dcgmi.INTERNAL_CODE
    assert "'A child process (152) exited with non-zero status 1'" in \
        internal['message']
    assert not r.ok   # the paste lacks the closing border, and pcie failed
    v100 = parse('dcgmi', DCGMI, 'dcgmi-diag-r2-v-human-dcgm4.4.1-4xV100-'
                 'pcie-FAIL-child-process-excerpt.out')
    assert statuses(v100, 'pcie') == {None: 'internal'}
    assert v100.value('gpus_failed') == 0


def test_a_deployment_error_names_its_gpu():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-human-deployment-row-remap-pending-'
              'ERROR-mlengineering-excerpt.out')
    # line 5: 'Error | GPU 3 has uncorrectable memory errors and row' +
    # line 6 ' remappings are pending'
    [result] = r.details['results']
    assert (result['gpu'], result['status'], result['code']) == \
        (3, 'fail', 'DCGM_FR_PENDING_ROW_REMAP')
    assert result['message'] == ('GPU 3 has uncorrectable memory errors and '
                                 'row remappings are pending')
    assert not r.ok


def test_every_plugin_skipped_is_not_measured():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-r3-human-dcgm4.4.2-GB10-2e12-all-'
              'SKIP-k8s-excerpt.out')
    # line 8 software Pass; lines 11-26: seven plugins 'Skip', 'GPU0: Skip'
    assert r.value('plugins_skipped') == 7 and r.value('plugins_run') == 1
    assert not r.ok and 'nothing was measured' in r.reason


# dcgmi diag -j ----------------------------------------------------------------

def test_dcgm4_json_document_doubtful_parses():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-r1-json-dcgm4.2.3-GB10-software-'
              'FAIL-persistence-DOUBTFUL-provenance.out')
    # DOUBTFUL: the shape is read, its content not relied on
    assert r.details['form'] == 'json'
    assert [(x['plugin'], x['gpu'], x['status']) for x in
            r.details['results']] == [('software', 0, 'fail')]
    assert r.details['results'][0]['code'] == 'DCGM_FR_PERSISTENCE_MODE'


def test_a_json_test_quoted_alone_is_cut_short():
    r = parse('dcgmi', DCGMI, 'dcgmi-diag-r3-json-dcgm4-8GPU-diagnostic-'
              'test-entity-results-excerpt.out')
    # line 2 "name" : "diagnostic"; entity_id 0 to 7, each "status" "Pass"
    assert statuses(r, 'diagnostic') == {i: 'pass' for i in range(8)}
    assert not r.ok and 'one test of the JSON document' in r.reason


def test_foreign_text_is_no_dcgmi_output():
    for text in ('', 'dcgmi: command not found\n',
                 (NVLINK / 'nvidia-smi-topo-m-8xH100-NV18-mlengineering-'
                  'excerpt.out').read_text()):
        r = parsers.parse('dcgmi', text)
        assert not r.ok and r.reason.startswith('not dcgmi output')


def test_dcgm_parser_is_linear():
    text = (DCGMI / 'dcgmi-diag-r3-fail-early-human-dcgm3.3.8-8xH100-GPU-'
            'Memory-FAIL-cuInit.out').read_text()
    start = time.perf_counter()
    parsers.parse('dcgmi', text)
    one = time.perf_counter() - start
    start = time.perf_counter()
    parsers.parse('dcgmi', text * 200)
    assert time.perf_counter() - start < max(one, 0.002) * 200 * 5


# nvidia-smi nvlink -s / -e ------------------------------------------------------

def test_nvlink_status_of_an_azure_a100():
    r = parse('nvlink', NVLINK, 'nvidia-smi-nvlink-s-GPU7-A100-80GB-azure-'
              'azhc.out')
    # line 1 'GPU 7: ...', lines 2-13 'Link 0..11: 25 GB/s'
    assert r.ok
    assert (r.value('links_active'), r.value('link_speed_min')) == (12, 25)
    assert r.details['gpus']['7']['uuid'] == \
        'GPU-c7e253b0-c227-6f10-e860-7482c85e7ce8'


def test_nvlink_status_of_one_a100_of_a_p4de():
    r = parse('nvlink', NVLINK, 'nvidia-smi-nvlink-s-A100-80GB-p4de-GPU0-'
              'excerpt.out')
    # line 2 'GPU 0: NVIDIA A100-SXM4-80GB', lines 3-14 'Link 0..11: 25 GB/s'
    assert r.ok, r.reason
    assert (r.value('gpus'), r.value('links_active'),
            r.value('links_inactive'), r.value('link_speed_min')) == \
        (1, 12, 0, 25)
    assert r.details['gpus']['0']['uuid'] == \
        'GPU-370ec676-e407-3115-836a-8ebcb3c4f62a'


def test_nvlink_status_of_an_h100_with_its_links_elided():
    r = parse('nvlink', NVLINK, 'nvidia-smi-nvlink-status-H100-anonymized-'
              'mlengineering-excerpt.out')
    # lines 3 and 5: links 0 and 17 at 26.562 GB/s; line 4 is '[...]'
    assert not r.ok
    assert "line 4 is not an NVLink line: '[...]'" in r.reason
    assert (r.value('links_active'), r.value('link_speed_min')) == \
        (2, 26.562)


def test_all_links_inactive_doubtful_parses():
    r = parse('nvlink', NVLINK, 'nvidia-smi-nvlink-s-GPU6-all-links-'
              'inactive-azhc-DOUBTFUL.out')
    assert not r.ok and r.reason == 'GPU 6: all NVLinks inactive'


def test_elided_excerpts_say_so():
    r = parse('nvlink', NVLINK, 'nvidia-smi-nvlink-status-8xH800-elided-llm-'
              'action-excerpt.out')
    # GPUs 0, 1 and 7 of 8 links at 26.562 GB/s; line 21 is '...'
    assert r.value('gpus') == 3 and r.value('link_speed_min') == 26.562
    assert not r.ok and "line 21 is not an NVLink line: '...'" in r.reason
    errors = parse('nvlink', NVLINK, 'nvidia-smi-nvlink-e-H100-anonymized-'
                   'mlengineering-excerpt.out')
    # lines 3-5, 7-9, 13-15: Replay, Recovery, CRC errors 0 on links 0, 1, 17
    assert (errors.value('replay_errors'), errors.value('recovery_errors'),
            errors.value('crc_errors')) == (0, 0, 0)
    assert "line 11 is not an NVLink line: '[...]'" in errors.reason


def test_a_topology_matrix_is_not_nvlink_status():
    r = parse('nvlink', NVLINK, 'nvidia-smi-topo-m-8xH100-NV18-'
              'mlengineering-excerpt.out')
    assert not r.ok and r.reason.startswith('not nvlink output')


# nvidia-smi -q --------------------------------------------------------------------

def test_a_whole_q_dump():
    r = parse('nvidia-smi', SMI, 'nvidia-smi-q-i0-H800-nonAzure-llm-'
              'action.out')
    [gpu] = r.details['gpus']
    # lines 11, 16, 25, 26, 28, 53 and 110 (Ecc Mode Current): the GPU's
    # names and modes
    assert gpu == {**gpu, 'bus_id': '00000000:18:00.0', 'name': 'NVIDIA H800',
                   'serial': '1651323018291',
                   'uuid': 'GPU-34bf77d1-c686-6821-79a8-32d326c5039c',
                   'vbios': '96.00.51.00.0E', 'persistence_mode': 'Enabled',
                   'ecc_mode': 'Disabled'}
    # line 9 'Attached GPUs : 8' (this is '-i 0': one section)
    assert (r.value('attached_gpus'), r.value('gpu_count')) == (8, 1)


def test_azure_nd_bus_ids_and_pending_flags():
    clean = parse('nvidia-smi', SMI, 'nvidia-smi-q-d-PAGE_RETIREMENT-8xA100-'
                  'ND-v4-azhc-clean.out')
    # lines 10, 16, ... 52: 'GPU 00000001:00:00.0' to 'GPU 00000008:00:00.0'
    assert [g['bus_id'] for g in clean.details['gpus']] == [
        f'0000000{i}:00:00.0' for i in range(1, 9)]
    assert clean.value('retired_pages_pending') == 0
    edited = parse('nvidia-smi', SMI, 'nvidia-smi-q-d-PAGE_RETIREMENT-8xA100-'
                   'ND-v4-azhc-EDITED-DOUBTFUL.out')
    assert edited.value('gpu_count') == 8      # DOUBTFUL: parses
    remap = parse('nvidia-smi', SMI, 'nvidia-smi-q-A100-80GB-remap-pending-'
                  'nonAzure-mlengineering-excerpt.out')
    # line 27 'Pending : Yes' under Remapped Rows
    assert remap.value('remapped_rows_pending') == 1
    assert not remap.ok and 'elided' in remap.reason


def test_health_check_logs_are_not_q_output():
    r = parse('nvidia-smi', SMI, 'azhc-run-health-checks-ND96isr-H100-v5-'
              'PASS.out')
    assert not r.ok and r.reason.startswith('not nvidia-smi output')


def test_a_result_printed_twice_counts_once():
    # some runs print "Successfully ran..." and the table twice
    text = (DCGMI / 'dcgmi-diag-r2-human-dcgm3.3.3-8xA100-80GB-p4de-'
            'PASS.out').read_text()
    once, twice = parsers.parse('dcgmi', text), parsers.parse('dcgmi',
                                                             text + text)
    assert twice.ok and twice.details['results'] == once.details['results']
