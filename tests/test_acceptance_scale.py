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


def test_a_partition_without_gpus_has_no_session_of_gpu_checks_alone():
    """NvlinkFabric (one job per node) is ReFrame's only for partitions
    with the 'gpu' feature: on HBv4 its one-node sessions held no test
    case (~4 s each), so they are not planned; nothing else changes."""
    from config.systems import azure_skus, sandbox

    def partition(name):
        return azure_skus.sku_partition(name, scheduler='slurm',
                                        launcher='srun', access=[],
                                        max_jobs=1)
    assert not plan.has_gpus(partition('hbv4'))
    assert plan.has_gpus(partition('ndv5'))
    assert plan.has_gpus(partition('ndgb200v6'))
    assert not any(plan.has_gpus(p) for p in sandbox.system['partitions'])
    nodes = [f'hb-{i:04d}' for i in range(1, 1201)]
    planned = plan.phases('azure', 'hbv4', nodes)
    alone = [p for p in planned if p.tag == 'one']
    assert len(alone) == 3 and all(p.names == ('NvlinkFabric',)
                                   for p in alone)
    assert plan.phases('azure', 'hbv4', nodes, gpus=False) == \
        [p for p in planned if p.tag != 'one']
    # one session per node with every node check: ReFrame filters them
    assert plan.phases('azure', 'hbv4', nodes, node_batch=1, gpus=False) \
        == plan.phases('azure', 'hbv4', nodes, node_batch=1)
