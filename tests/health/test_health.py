"""Health around a test, without ReFrame: the real sampler script on a sysfs
tree built from a real public dump and a stand-in nvidia-smi replaying real
XML, then the pure parsers and rules (tests/support/data/health/PROVENANCE.md)."""
import os
import subprocess
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from checks.health import assessment, dump, fingerprint, gpu, infiniband, \
    kernel_log, nvlink, rules
from tests.support.health_data import HEALTH, build_sysfs, raise_counter
from tests.support.helpers import REPO, STANDINS
from tests.support.hostile_text import random_text

SAMPLER = REPO / 'checks' / 'common' / 'node_probe.sh'
HB = 'Standard_HB176rs_v4'
ND = 'Standard_ND96isr_H100_v5'


def xml(name):
    return (HEALTH / name).read_text()


def sample(tmp_path, phase, node='sb-n3', env=None):
    """Run the shipped sampler as a job does, on one node."""
    environment = {**os.environ, 'SLURMD_NODENAME': node,
                   'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}',
                   **(env or {})}
    subprocess.run(['sh', str(SAMPLER), phase, 'samples',
                    str(tmp_path / 'sys-%n'), str(tmp_path / 'prints')],
                   cwd=tmp_path, env=environment, check=True, timeout=60)
    return dump.split((tmp_path / 'samples' / f'{phase}.{node}.txt')
                      .read_text())


def by_metric(rows, device=None):
    return {(r.metric, r.device): r for r in rows
            if device is None or r.device == device}


def test_link_downed_fails_and_symbol_errors_are_recorded(tmp_path):
    root = build_sysfs(tmp_path / 'sys-sb-n3')
    before = sample(tmp_path, 'before')
    raise_counter(root, 'link_downed', 1)
    raise_counter(root, 'symbol_error', 7)
    after = sample(tmp_path, 'after')
    result = assessment.assess('sb-n3', before, after, rules.load(),
                          rules.nominal(HB))
    rows = by_metric(result.rows)
    assert rows[('link_downed', 'mlx5_0/1')].value == 1
    assert rows[('link_downed', 'mlx5_0/1')].result == 'fail'
    assert rows[('symbol_error', 'mlx5_0/1')].value == 7
    assert rows[('symbol_error', 'mlx5_0/1')].result == 'no_reference'
    summary = rows[('health', 'mlx5_0/1')]
    assert (summary.value, summary.result) == (1, 'fail')
    assert summary.reason == 'mlx5_0/1: link_downed +1 during the test'
    assert summary.params['rate_gbps'] == 400.0
    assert summary.params['firmware'] == '14.28.2006'
    assert [(f.metric, f.severity) for f in result.findings] == \
        [('link_downed', 'fail')]
    # nothing else changed: the traffic counters are not rows
    assert sorted(r.metric for r in result.rows if r.metric not in (
        'health', 'health_not_available')) == ['link_downed', 'symbol_error']


def test_unchanged_counters_give_one_summary_row_per_port(tmp_path):
    build_sysfs(tmp_path / 'sys-sb-n1')
    before = sample(tmp_path, 'before', 'sb-n1')
    after = sample(tmp_path, 'after', 'sb-n1')
    result = assessment.assess('sb-n1', before, after, rules.load(),
                          rules.nominal(HB))
    assert [(r.metric, r.device, r.result) for r in result.rows
            if r.metric != 'health_not_available'] == \
        [('health', 'mlx5_0/1', 'pass')]
    assert result.findings == []


def test_a_port_below_the_skus_rate_is_a_finding():
    lines = [path + ':' + value.strip() for path, value in
             _fixture_lines().items()]
    sample_ = infiniband.parse(lines)
    assert sample_.ports['mlx5_0/1'].rate_gbps == 25.0
    assert sample_.ports['mlx5_0/1'].state == 'ACTIVE'
    assert sample_.ports['mlx5_0/1'].counters['local_ack_timeout_err'] == 131
    assert sample_.firmware == {'hfi1_0': '1.27.0', 'mlx4_0': '2.31.5050',
                                'mlx5_0': '14.28.2006'}
    text = '##clusterproof-health infiniband\n' + '\n'.join(lines)
    result = assessment.assess('n', dump.split(text), dump.split(text),
                          rules.load(), rules.nominal(HB))
    failed = sorted(f.device for f in result.findings
                    if f.metric == 'port_rate')
    assert failed == ['hfi1_0/1', 'mlx4_0/1', 'mlx4_0/2', 'mlx5_0/1']
    reason = next(f.reason for f in result.findings
                  if f.device == 'mlx5_0/1')
    assert reason == ("mlx5_0/1: port at 25 Gb/s, below the SKU's 400 Gb/s")
    # a SKU without a published line rate is not judged on rate
    quiet = assessment.assess('n', dump.split(text), dump.split(text),
                         rules.load(), rules.nominal('Standard_D4s_v5'))
    assert not [f for f in quiet.findings if f.metric == 'port_rate']


def _fixture_lines():
    from tests.support.health_data import TTAR, ttar_files
    prefix = 'fixtures/sys/class/infiniband/'
    return {path[len(prefix):]: content
            for path, content in ttar_files(TTAR.read_text()).items()
            if '/ports/' in path or path.endswith('fw_ver')}


def test_nvidia_smi_xml_of_two_schemas():
    a100 = gpu.parse(xml('telegraf_a100-sxm4-v12.xml'))
    assert (a100.driver_version, a100.cuda_version) == ('535.54.03', '12.2')
    one = a100.gpus[0]
    assert (one.pci, one.vbios) == ('00000000:01:00.0', '92.00.36.00.02')
    assert one.counts['ecc_dbe_volatile'] == 0
    assert one.counts['retired_pages_dbe'] is None       # N/A
    assert one.flags['remapped_rows_failure'] is None    # MIG: N/A
    assert one.clock_events == []
    assert one.gauges['temperature_c'] == 27.0
    assert one.gauges['power_w'] == 67.03
    assert one.gauges['sm_clock_mhz'] == 1275.0
    assert (one.gauges['pcie_link_width'], one.gauges['pcie_link_gen_max']) \
        == (16.0, 4.0)
    a10g = gpu.parse(xml('telegraf_a10g.xml')).gpus[0]
    assert a10g.clock_events == ['gpu_idle']             # throttle names
    assert a10g.flags['remapped_rows_failure'] is False
    assert a10g.counts['remapped_rows_uncorrectable'] == 0
    assert a10g.gauges['pcie_link_width'] == 8.0
    v13 = gpu.parse(xml('telegraf_rtx-4000-sff-ada-v13.xml')).gpus[0]
    assert v13.clock_event_us['hw_thermal_slowdown'] == 0
    assert v13.clock_event_us['sw_power_cap'] == 4251825415
    with pytest.raises(ValueError, match='not nvidia-smi XML'):
        gpu.parse('NVIDIA-SMI has failed because it could not communicate')


def gpu_assess(before_file, after_file, sku=ND, log=''):
    def as_dump(name, extra=''):
        return dump.split('##clusterproof-health nvidia-smi\n' + xml(name)
                          + extra)
    log_section = f'\n##clusterproof-health log\n{log}' if log else ''
    return assessment.assess('nd-1', as_dump(before_file),
                        as_dump(after_file, log_section), rules.load(),
                        rules.nominal(sku))


def test_a_new_dbe_fails_the_gpu():
    result = gpu_assess('telegraf_a100-sxm4-v12.xml', 'a100-sxm4-v12_dbe1.xml')
    rows = by_metric(result.rows)
    assert rows[('ecc_dbe_volatile', 'gpu0')].value == 1
    assert rows[('ecc_dbe_aggregate', 'gpu0')].result == 'fail'
    assert rows[('health', 'gpu0')].value == 3   # 2 DBE + PCIe gen 4 < 5
    assert 'GPU 0: ecc_dbe_volatile +1 during the test' in \
        rows[('health', 'gpu0')].reason
    assert 'GPU 0 PCIe link at most gen 4, below gen 5' in \
        rows[('health', 'gpu0')].reason
    # every row about the GPU names it: index, bus id (the <gpu id=...>
    # attribute) and serial (<serial>1650522003820</serial>) of the XML
    named = {'index': 0, 'bus_id': '00000000:01:00.0',
             'serial': '1650522003820'}
    assert {(r.metric, r.device): r.gpu for r in result.rows} == {
        ('ecc_dbe_volatile', 'gpu0'): named,
        ('ecc_dbe_aggregate', 'gpu0'): named,
        ('pcie_link_gen_max', 'gpu0'): named, ('health', 'gpu0'): named}


def test_healthy_samples_of_the_right_sku_have_no_finding():
    result = gpu_assess('telegraf_a100-sxm4-v12.xml',
                        'telegraf_a100-sxm4-v12.xml',
                        sku='Standard_ND96amsr_A100_v4')
    assert result.findings == []
    assert [(r.metric, r.device, r.result) for r in result.rows] == \
        [('health', 'gpu0', 'pass')]
    assert result.rows[0].params['temperature_c'] == 27.0


def test_thermal_slowdown_is_named_not_failed():
    result = gpu_assess('telegraf_a100-sxm4-v12.xml',
                        'a100-sxm4-v12_hw_thermal_slowdown.xml',
                        sku='Standard_ND96amsr_A100_v4')
    assert [(f.severity, f.reason) for f in result.findings] == \
        [('warn', 'GPU 0 hw thermal slowdown active during the run')]
    assert by_metric(result.rows)[('health', 'gpu0')].result == 'pass'
    timed = gpu_assess('telegraf_rtx-4000-sff-ada-v13.xml',
                       'rtx-4000-sff-ada-v13_hw_therm_slowdown_2.5s.xml',
                       sku='Standard_X')
    assert [(f.severity, f.reason, f.value) for f in timed.findings] == \
        [('warn', 'GPU 0 hw thermal slowdown for 2.5 s during the run', 2.5)]


def test_row_remap_failure_fails_the_gpu():
    result = gpu_assess('telegraf_a10g.xml', 'a10g_remapped_row_failure.xml',
                        sku='Standard_X')
    assert [(f.metric, f.severity, f.reason) for f in result.findings] == \
        [('remapped_rows_failure', 'fail', 'GPU 0 remapped rows failure')]


def test_xid_of_the_error_class_on_its_gpu():
    line = (HEALTH / 'nvsentinel_issue155_xid79.log').read_text()
    [xid] = kernel_log.xids(line.splitlines())
    assert (xid.pci, xid.code) == ('0000:44:00', 79)
    assert kernel_log.gpu_of_xid(xid, ['00000000:01:00.0',
                                       '00000000:44:00.0']) == 1
    assert kernel_log.gpu_of_xid(xid, ['00000000:01:00.0']) is None
    moved = xml('telegraf_a100-sxm4-v12.xml').replace(
        '<gpu id="00000000:01:00.0">', '<gpu id="00000000:44:00.0">')
    text = '##clusterproof-health nvidia-smi\n' + moved
    result = assessment.assess('nd-1', dump.split(text), dump.split(
        text + '\n##clusterproof-health log\n' + line), rules.load(),
        rules.nominal('Standard_ND96amsr_A100_v4'))
    assert [(f.metric, f.value) for f in result.findings] == \
        [('xid_error', 79)]


def test_link_flaps_are_counted_as_azhc_counts_them():
    flapping = (HEALTH / 'azhc_1dev_6flap_syslog').read_text().splitlines()
    assert kernel_log.link_flaps(flapping) == {'ib6': 6}
    quiet = (HEALTH / 'azhc_0flap_syslog').read_text().splitlines()
    assert kernel_log.link_flaps(quiet) == {}
    text = '##clusterproof-health log\n' + '\n'.join(flapping)
    result = assessment.assess('hb-1', dump.split(''), dump.split(text),
                          rules.load(), rules.nominal(HB))
    assert [(f.device, f.metric, f.value) for f in result.findings] == \
        [('ib6', 'link_flaps', 6)]


def test_missing_tools_are_not_available_once_never_a_finding(tmp_path):
    before = sample(tmp_path, 'before', 'hb-1')
    after = sample(tmp_path, 'after', 'hb-1')
    result = assessment.assess('hb-1', before, after, rules.load(),
                          rules.nominal(HB))
    assert result.findings == []
    [row] = result.rows
    assert (row.metric, row.result) == ('health_not_available',
                                        'informational')
    assert 'gpu: ' in row.reason and 'infiniband: no ' in row.reason
    assert result.not_available['gpu'].startswith('nvidia-smi -q -x exit 9')
    lost = assessment.assess('hb-1', before, None, rules.load(),
                             rules.nominal(HB))
    assert [r.reason for r in lost.rows] == \
        ['not available: sample: no after sample on hb-1']


def test_the_stand_in_checks_its_arguments(tmp_path):
    result = subprocess.run([str(STANDINS / 'nvidia-smi'), '-q'],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2
    assert 'only "-q -x" and "nvlink -s" are' in result.stderr


def test_the_fingerprint_of_a_node(tmp_path):
    build_sysfs(tmp_path / 'sys-nd-1')
    env = {'CLUSTERPROOF_REPLAY_NVIDIA_SMI_XML':
           str(HEALTH / 'telegraf_a100-sxm4-v12.xml')}
    before = sample(tmp_path, 'before', 'nd-1', env)
    pool = b''.join(key.ljust(512, b'\0') + value.ljust(2048, b'\0')
                    for key, value in [(b'HostName', b'ccw-gpu-7'),
                                       (b'PhysicalHostName', b'GN4-21-17')])
    columns = fingerprint.of_node(before, pool)
    assert columns['kernel_version'] == os.uname().release
    assert columns['hca_firmware'] == '14.28.2006'
    assert columns['gpu_driver_version'] == '535.54.03'
    assert columns['cuda_version'] == '12.2'
    assert columns['gpu_vbios'] == '92.00.36.00.02'
    assert columns['physical_host'] == 'GN4-21-17'
    assert set(columns) == set(fingerprint.COLUMNS)
    # read once per node: the second job of the session reads the cache
    cached = (tmp_path / 'prints' / 'nd-1.txt').read_text()
    assert f'kernel_version={os.uname().release}' in cached
    assert fingerprint.nccl_version(
        '# nccl-tests\nnode1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4'
        '\n') == '2.21.5+cuda12.4'
    assert fingerprint.of_rows({'a': {'gpu_driver_version': '535'},
                                'b': {'gpu_driver_version': '550'}},
                               ['a', 'b'])['gpu_driver_version'] == '535,550'


def test_sampling_adds_little_time(tmp_path):
    build_sysfs(tmp_path / 'sys-sb-n1')
    began = time.monotonic()
    sample(tmp_path, 'before', 'sb-n1')
    sample(tmp_path, 'after', 'sb-n1')
    assert time.monotonic() - began < 5


def test_a_pcie_link_below_the_skus_is_a_finding():
    # a10g's link trained at x8 of its x16 (and its current generation 1
    # at idle, which is not judged)
    result = gpu_assess('telegraf_a10g.xml', 'telegraf_a10g.xml')
    assert sorted(f.reason for f in result.findings) == [
        'GPU 0 PCIe link at most gen 4, below gen 5',
        'GPU 0 PCIe link x8, below x16']
    assert {f.source for f in result.findings} == {
        rules.load()['sources']['H100']}


def test_inactive_nvlinks_fail_their_gpu(tmp_path):
    """AzHC's outputs of one GPU each (GPU 7 good, GPU 6 all inactive) and
    the good one with link 3 inactive, replayed as one node's
    `nvidia-smi nvlink -s` under eight GPUs of Telegraf's A100 XML."""
    text = xml('telegraf_a100-sxm4-v12.xml')
    start, end = text.index('<gpu id='), text.index('</gpu>') + len('</gpu>')
    eight = text[:start] + ''.join(
        text[start:end].replace('00000000:01:00.0', f'00000000:{i:02X}:00.0')
        for i in range(8)) + text[end:]
    (tmp_path / 'gpus.xml').write_text(eight)
    good = (HEALTH / 'azhc_good_nvlink_status.txt').read_text()
    one_down = (HEALTH / 'azhc_good_nvlink_status_link3_inactive.txt') \
        .read_text().replace('GPU 7:', 'GPU 5:')
    (tmp_path / 'nvlink.txt').write_text(
        (HEALTH / 'azhc_bad_nvlink_status.txt').read_text() + one_down
        + good)
    env = {'CLUSTERPROOF_REPLAY_NVIDIA_SMI_XML': str(tmp_path / 'gpus.xml'),
           'CLUSTERPROOF_REPLAY_NVIDIA_SMI_NVLINK': str(tmp_path /
                                                        'nvlink.txt')}
    before = sample(tmp_path, 'before', 'nd-1', env)
    after = sample(tmp_path, 'after', 'nd-1', env)
    links = nvlink.parse(after.lines('nvlink'))
    assert (links[7].active, links[7].inactive) == (list(range(12)), [])
    assert links[6].all_inactive and links[5].inactive == [3]
    result = assessment.assess('nd-1', before, after, rules.load(),
                          rules.nominal('Standard_ND96amsr_A100_v4'))
    assert sorted((f.device, f.reason) for f in result.findings) == [
        ('gpu5', 'GPU 5 NVLink 3 inactive'),
        ('gpu6', 'GPU 6 all NVLinks inactive')]
    summary = by_metric(result.rows)[('health', 'gpu7')]
    assert (summary.result, summary.params['nvlink_active']) == ('pass', 12)
    # no NVLink output (not enabled there): nothing judged
    quiet = sample(tmp_path, 'after', 'nd-1',
                   {'CLUSTERPROOF_REPLAY_NVIDIA_SMI_XML': str(tmp_path /
                                                          'gpus.xml')})
    assert quiet.lines('nvlink') == []
    assert assessment.assess('nd-1', before, quiet, rules.load(),
                             rules.nominal('Standard_ND96amsr_A100_v4')
                             ).findings == []


SAMPLE_PARSERS = {
    'sample': lambda text: dump.split(text),
    'infiniband': lambda text: infiniband.parse(text.splitlines()),
    'log': lambda text: (kernel_log.link_flaps(text.splitlines()),
                         kernel_log.xids(text.splitlines())),
    'nvlink': lambda text: nvlink.parse(text.splitlines()),
}


@pytest.mark.parametrize('name', sorted(SAMPLE_PARSERS))
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text())
def test_sample_parsers_take_any_text(name, text):
    SAMPLE_PARSERS[name](text)
    with pytest.raises(ValueError):
        gpu.parse(text + '<')


@pytest.mark.parametrize('name', sorted(SAMPLE_PARSERS))
def test_sample_parsers_are_linear(name):
    """Long runs of the patterns they look for, and random text: 400 k
    characters in well under the bound a quadratic parser would need."""
    for text in (random_text(400_000),
                 'mlx5_0/ports/1/counters/link_downed:' * 10_000,
                 'GPU 1: Link 2: ' * 25_000,
                 'NVRM: Xid (PCI:0000:' * 20_000,
                 'ib0 lost carrier ' * 25_000):
        began = time.perf_counter()
        SAMPLE_PARSERS[name](text)
        assert time.perf_counter() - began < 5.0


def test_samples_take_the_names_the_job_recorded():
    from checks.common.health_sampling import as_job_nodes
    assert as_job_nodes({'hb-1': 1, 'sb-n2': 2},
                        ['hb-1.cluster.internal', 'sb-n2']) == \
        {'hb-1.cluster.internal': 1, 'sb-n2': 2}


def test_xids_of_other_classes_or_buses_are_kept():
    line = (HEALTH / 'nvsentinel_issue155_xid79.log').read_text()
    text = '##clusterproof-health nvidia-smi\n' + xml(
        'telegraf_a100-sxm4-v12.xml')
    result = assessment.assess('nd-1', dump.split(text), dump.split(
        text + '\n##clusterproof-health log\n' + line + line.replace(
            ': 79, ', ': 13, ')), rules.load(),
        rules.nominal('Standard_ND96amsr_A100_v4'))
    # bus 44 is no GPU of this sample: kept under its bus id
    assert [(f.device, f.metric, f.value) for f in result.findings] == \
        [('pci 0000:44:00', 'xid_error', 79)]
    assert [(r.device, r.metric, r.value, r.result) for r in result.rows
            if r.metric == 'xid'] == [('pci 0000:44:00', 'xid', 13,
                                       'no_reference')]
