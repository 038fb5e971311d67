"""Acceptance on thousands of nodes: batched ReFrame sessions whose command
lines do not grow with the partition, the set scope's pin as host ranges."""
import os

from reframe.utility import nodelist_expand

from checks.common import fan_out
from scripts.acceptance import plan

SELECTION = plan.Selection(checks=['checks'], tags=['acceptance'])


def command_lines(phases):
    return [plan.reframe_options(p, SELECTION, 'r.json', 'prefix', 0)
            for p in phases]


def test_ten_thousand_nodes_plan_in_batches_of_bounded_arguments():
    nodes = [f'ndh200-{i:05d}' for i in range(10_000) if i % 97]
    phases = plan.phases('azure', 'ndh200', nodes)
    scopes = [(p.scope, p.tag) for p in phases]
    jobs = -(-len(nodes) // plan.NODE_BATCH)          # batch jobs of nodes
    per_session = plan.MAX_NAMES // plan.NODE_BATCH   # batch pins a session
    fanned = -(-jobs // per_session)
    single = -(-len(nodes) // plan.MAX_PINS)
    # batches of NODE_BATCH ring pairs, each a path of NODE_BATCH + 1 names
    paths = -(-len(nodes) // plan.NODE_BATCH)
    paired = -(-paths // (plan.MAX_NAMES // (plan.NODE_BATCH + 1)))
    assert scopes == [('node', '')] * fanned + [('node', 'one')] * single + \
        [('pair', '')] * paired + \
        [('set', ''), ('whole', '')]
    # the fan-out checks: every node in exactly one batch of NODE_BATCH
    batch_pins = [pin for p in phases if (p.scope, p.tag) == ('node', '')
                  for pin in p.pins]
    assert [node for pin in batch_pins for node in pin] == nodes
    assert {len(pin) for pin in batch_pins[:-1]} == {plan.NODE_BATCH}
    assert all(p.names == plan.FANOUT_CHECKS for p in phases[:fanned])
    # the others: every node in exactly one one-node pin
    assert [pin[0] for p in phases if (p.scope, p.tag) == ('node', 'one')
            for pin in p.pins] == nodes
    # the batched pair checks: every ring pair once, in the ring's order
    assert [pair for p in phases if (p.scope, p.tag) == ('pair', '')
            for pin in p.pins for pair in fan_out.path_pairs(list(pin))] \
        == plan.ring_pairs(nodes)
    labels = [p.label for p in phases]
    assert len(set(labels)) == len(labels)
    assert labels[0] == f'ndh200-node-1of{fanned}'
    limit = os.sysconf('SC_ARG_MAX')
    for argv in command_lines(phases):
        assert max(map(len, argv)) < 32 * 1024          # one argument
        assert sum(len(a) + 1 for a in argv) < limit // 8
    [collective] = [p for p in phases if p.scope == 'set']
    options = collective.scope_options()
    assert f'OsuCollective.num_nodes={len(nodes)}' in options
    assert collective.pins == [tuple(nodes)]
    # on the command line, host ranges naming exactly the usable nodes
    # (Slurm's own syntax, which ReFrame's --nodelist keeps)
    pin = options[options.index('-P') + 1].split('=', 1)[1]
    assert nodelist_expand(pin) == nodes


def test_host_ranges_keep_prefix_width_and_gaps():
    assert plan.host_ranges(['hb-1', 'hb-2', 'hb-3', 'login', 'hb-5',
                             'n-009', 'n-010', 'n-0011']) == \
        ['hb-[1-3]', 'login', 'hb-5', 'n-[009-010]', 'n-0011']
    assert plan.host_ranges([]) == []


def test_a_small_partition_is_one_session_per_scope():
    phases = plan.phases('sandbox', 'hbv4', ['sb-n1', 'sb-n2', 'sb-n3'])
    assert [p.label for p in phases] == ['hbv4-node', 'hbv4-node-one',
                                         'hbv4-pair',
                                         'hbv4-set', 'hbv4-whole']
    # --node-batch 1: one job per node for every node check, as before
    phases = plan.phases('sandbox', 'hbv4', ['sb-n1', 'sb-n2'], node_batch=1)
    assert [p.label for p in phases] == ['hbv4-node', 'hbv4-pair',
                                         'hbv4-set', 'hbv4-whole']
    assert phases[0].pins == [('sb-n1',), ('sb-n2',)] and not phases[0].names


def test_node_checks_that_cannot_run_on_a_partition_are_not_planned():
    """As the checks decide it: no GPU check without the 'gpu' feature (on
    HBv4 NvlinkFabric's one-node sessions held no test case), and no
    NvlinkFabric without multi-node NVLink (on ND H100 it skipped on every
    node, and a skip makes a node not measured); nothing else changes."""
    from config.systems import azure_skus, sandbox

    def left_out(name):
        return plan.left_out(azure_skus.sku_partition(
            name, scheduler='slurm', launcher='srun', access=[], max_jobs=1))
    per_gpu = ('GpuCopyBandwidth', 'GpuMemoryBandwidth', 'GpuComputeQuick',
               'GpuComputeBurn', 'GpuInventory', 'GpuNvlink', 'GpuDiag',
               'GpuDiagDaily')
    nccl = ('NcclSingleNode', 'NcclHealthCheckAllReduce')
    assert left_out('hbv4') == (*nccl, 'NvlinkFabric', *per_gpu)
    assert left_out('ndv5') == ('NvlinkFabric',)
    assert left_out('ndgb200v6') == ()
    assert {plan.left_out(p) for p in sandbox.system['partitions']} == {
        (*nccl, 'NvlinkFabric', *per_gpu)}
    nodes = [f'nd-{i:04d}' for i in range(1, 1201)]
    planned = plan.phases('azure', 'ndv5', nodes)
    alone = [p for p in planned if p.tag == 'one']
    assert len(alone) == 3 and all(p.names == ('NvlinkFabric', *per_gpu)
                                   for p in alone)
    # the per-GPU and GPU node checks run one node per job, as NvlinkFabric
    assert [p.names for p in plan.phases('azure', 'ndv5', nodes,
                                         leaving_out=left_out('ndv5'))
            if p.tag == 'one'] == [per_gpu] * 3
    hbv4 = plan.phases('azure', 'hbv4', nodes, leaving_out=left_out('hbv4'))
    assert [p.label for p in hbv4] == [p.label.replace('ndv5', 'hbv4')
                                       for p in planned if p.tag != 'one']
    assert 'NcclSingleNode' not in hbv4[0].names
    assert set(hbv4[0].names) == set(plan.FANOUT_CHECKS) - {
        'NcclSingleNode', 'NcclHealthCheckAllReduce'}
    # one job per node, every node check in one session: those left out
    # are not asked for
    [one] = plan.phases('azure', 'ndv5', nodes[:3], node_batch=1,
                        leaving_out=left_out('ndv5'))[:1]
    assert one.names == tuple(c for c in plan.NODE_CHECKS
                              if c != 'NvlinkFabric')
    assert plan.phases('azure', 'ndgb200v6', nodes, leaving_out=()) == \
        plan.phases('azure', 'ndgb200v6', nodes)
