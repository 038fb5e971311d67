"""NCCL's transport, read from its own INFO log: real logs of each
transport (tests/support/data/nccl-tests/info, see PROVENANCE.md there).

Counts below were read by eye from the files.
"""
import pytest

from checks.parsers import nccl

from tests.support.helpers import DATA

INFO = DATA / 'nccl-tests' / 'info'
IB_GDR = 'ib-gdr_8gpu-2node-nccl2.27.5-excerpt.log'
IB_NO_GDR = 'ib-nogdr_v100-roce-2node-excerpt.log'
SOCKET = 'socket_v100-2node-nccl2.7.8.log'
NVLS = 'nvls_h800-1node-8gpu-g8-nccl2.18.3-trimmed.out'
GB10 = DATA / 'nccl-tests' / 'all_gather_gb10-dgxspark-2node-v2.18.3-1G-4G.out'


def summary(name):
    return nccl.transport((INFO / name).read_text())


def test_ib_with_gpudirect_rdma():
    found = summary(IB_GDR)
    assert found['channels'] == {'NET/IB/GDRDMA': 30, 'P2P/IPC': 25}
    assert nccl.measured_fabric(found, multinode=True) == 'ib'
    assert nccl.transport_problem(found, True, 'ib') is None


def test_ib_through_the_hpcx_sharp_plugin_and_pxn():
    # Azure HPC images load HPC-X's plugin: NET/IBext, PXN proxies as (8)
    found = summary('ib-gdr-ibext-pxn_h100-2node-excerpt.log')
    assert found['channels'] == {'NET/IBext/GDRDMA': 2, 'P2P/IPC': 1}
    assert nccl.measured_fabric(found, multinode=True) == 'ib'
    assert nccl.transport_problem(found, True, 'ib') is None


def test_ib_without_gpudirect_rdma_fails():
    found = summary(IB_NO_GDR)
    assert found['channels'] == {'NET/IB': 1, 'SHM': 1}
    assert found['network'] == ['IB']
    assert nccl.measured_fabric(found, multinode=True) is None
    assert nccl.transport_problem(found, True, 'ib') == (
        'InfiniBand without GPUDirect RDMA (no /GDRDMA): 1 x NET/IB')


def test_socket_fallback_fails_with_that_reason():
    found = summary(SOCKET)
    assert found['channels'] == {'NET/Socket': 8, 'P2P/IPC': 8, 'SHM': 4}
    assert found['network'] == ['Socket']
    for multinode, fabric in ((True, 'ib'), (True, 'mnnvl'),
                              (False, 'nvlink')):
        assert nccl.transport_problem(found, multinode, fabric) == (
            'NCCL fell back to sockets (TCP, no InfiniBand): 8 x NET/Socket')


def test_nvls_on_one_vm():
    found = summary(NVLS)
    assert found['nvls'] and not found['mnnvl']
    assert found['channels'] == {'P2P/direct pointer': 7}
    # "Using network Socket" on a host without IB is no problem on one VM:
    # no channel went through it
    assert found['network'] == ['Socket']
    assert nccl.measured_fabric(found, multinode=False) == 'nvlink'
    assert nccl.transport_problem(found, False, 'nvlink') is None
    # ... but proves nothing about a run across VMs
    assert nccl.transport_problem(found, True, 'ib') == (
        'no inter-node channel ("via NET/...") in NCCL\'s log: the '
        'transport is unproven')


def test_one_vm_through_host_memory_or_network_fails():
    assert nccl.transport_problem(summary(IB_GDR), False, 'nvlink') == (
        'a one-VM run went through the network: 30 x NET/IB/GDRDMA')
    shm_only = nccl.transport(
        '\n'.join(line for line in (INFO / IB_NO_GDR).read_text().splitlines()
                  if 'NET/' not in line))
    assert nccl.transport_problem(shm_only, False, 'nvlink') == (
        'GPUs exchanged data through host shared memory, not NVLink: '
        '1 x SHM channel(s)')


def test_multi_node_nvlink_markers():
    found = summary('mnnvl_gb-1host-4gpu-excerpt.log')
    assert found['mnnvl'] and found['channels'] == {'P2P/MNNVL': 1}
    # NVLink inside the VM; across VMs, NVLink with no network channel
    assert nccl.measured_fabric(found, multinode=False) == 'nvlink'
    assert nccl.measured_fabric(found, multinode=True) == 'mnnvl'
    assert nccl.transport_problem(found, True, 'ib') == (
        'expected InfiniBand, but the VMs talked over multi-node NVLink')


def test_ib_run_where_mnnvl_was_expected_fails():
    assert nccl.transport_problem(summary(IB_GDR), True, 'mnnvl') == (
        'expected multi-node NVLink, found ib: 30 x NET/IB/GDRDMA')


def test_no_log_is_unproven():
    found = nccl.transport(GB10.read_text())
    assert not found['logged'] and found['channels'] == {}
    assert nccl.transport_problem(found, True, 'ib').startswith(
        'no NCCL INFO lines in the output (NCCL_DEBUG=INFO not in effect?)')


def test_parse_judges_the_fabric_only_when_asked():
    text = (INFO / NVLS).read_text()
    plain = nccl.parse(text)
    assert plain.ok and plain.value('busbw') == 164.97
    assert plain.details['fabric'] == 'nvlink'
    assert plain.details['transport']['nvls'] is True
    assert nccl.parse(text, fabric='nvlink').ok
    wrong = nccl.parse(text, fabric='ib')
    assert not wrong.ok
    assert wrong.reason.startswith('no inter-node channel')
    # the numbers stay in the details for whoever reads the failure
    assert wrong.details['rows'][-1]['oop_busbw'] == 164.97


ONE_VM = DATA / 'nccl-tests' / 'all_reduce_h100-1node-8gpu-g8-single-process.out'


def test_ib_loopback_on_one_vm_goes_through_the_hcas_only():
    # The health checks' IB loopback (NcclHealthCheckIbLoopback): one VM,
    # fabric 'ib'. No real one-VM loopback log is public: the test puts the
    # real IB log's lines before a real one-VM table (no INFO lines, 8 ranks
    # on one host), with and without its 25 P2P/IPC channels.
    log = (INFO / IB_GDR).read_text()
    table = ONE_VM.read_text()
    mixed = nccl.parse(log + table, fabric='ib')
    assert not mixed.ok
    assert mixed.reason == ('an InfiniBand loopback run on one VM also moved '
                            'data inside the VM, not through its HCAs: '
                            '25 x P2P/IPC')
    hcas_only = '\n'.join(line for line in log.splitlines()
                          if 'via P2P' not in line)
    loopback = nccl.parse(hcas_only + '\n' + table, fabric='ib')
    assert loopback.ok, loopback.reason
    assert loopback.details['fabric'] == 'ib'
    assert loopback.details['transport']['channels'] == {'NET/IB/GDRDMA': 30}
    # across VMs the same P2P channels inside each VM are expected
    assert nccl.parse(log + GB10.read_text(), expected_ranks=2,
                      fabric='ib').ok


def test_parse_with_socket_log_before_the_table():
    text = (INFO / SOCKET).read_text() + GB10.read_text()
    result = nccl.parse(text, expected_ranks=2, fabric='ib')
    assert not result.ok
    assert result.reason == ('NCCL fell back to sockets (TCP, no '
                             'InfiniBand): 8 x NET/Socket')


@pytest.mark.parametrize('via, kind', [
    ('NET/IB/3/GDRDMA', 'NET/IB/GDRDMA'),
    ('NET/IB/0/GDRDMA/Shared', 'NET/IB/GDRDMA'),
    ('NET/IB/0', 'NET/IB'),
    ('NET/IBext_v8/1/GDRDMA', 'NET/IBext_v8/GDRDMA'),
    ('NET/IBext/0(8)/GDRDMA', 'NET/IBext/GDRDMA'),
    ('NET/Socket/0', 'NET/Socket'),
    ('P2P/IPC', 'P2P/IPC'),
    ('P2P/CUMEM/read', 'P2P/CUMEM'),
    ('P2P/direct pointer', 'P2P/direct pointer'),
    ('SHM/direct/direct', 'SHM'),
    ('direct shared memory', 'SHM'),
])
def test_channel_kinds(via, kind):
    assert nccl._channel_kind(via) == kind


def test_other_networks_are_not_infiniband():
    # kinds as _channel_kind writes them: an OFI (EFA) plugin, RoCE via
    # NVIDIA's RDMA plugin without GDR
    efa = {'logged': True, 'channels': {'NET/AWS Libfabric/GDRDMA': 4},
           'network': [], 'nvls': False, 'mnnvl': False}
    assert nccl.transport_problem(efa, True, 'ib') == (
        'inter-node traffic not over InfiniBand: 4 x NET/AWS Libfabric/GDRDMA')
    plugin = dict(efa, channels={'NET/NCCL RDMA Plugin v10': 2})
    assert nccl.transport_problem(plugin, True, 'ib') == (
        'InfiniBand without GPUDirect RDMA (no /GDRDMA): '
        '2 x NET/NCCL RDMA Plugin v10')
