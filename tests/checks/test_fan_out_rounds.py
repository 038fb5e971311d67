"""Nodes that are not independent (the Slurm sandbox's five nodes are one
host's two cores) measure a node check's batch one node after the other:
the partition extra fan_out.AT_ONCE; elsewhere every node at once."""
import re

import pytest

from checks.common import fan_out
from config.systems import sandbox
from tests.support.dry_runs import dry_run

NODES = ['sb-n1', 'sb-n2', 'sb-n3', 'sb-n4', 'sb-n5']


def test_node_rounds_hold_at_most_so_many_nodes():
    assert fan_out.node_rounds(NODES, 1) == [[n] for n in NODES]
    assert fan_out.node_rounds(NODES, 2) == [NODES[:2], NODES[2:4], NODES[4:]]
    assert fan_out.node_rounds(NODES, None) is None      # all at once
    assert fan_out.node_rounds(NODES, 5) is None
    with pytest.raises(ValueError, match=fan_out.AT_ONCE):
        fan_out.node_rounds(NODES, -1)
    # pairs keep their rounds of node-disjoint pairs
    pairs = fan_out.path_pairs(NODES + NODES[:1])
    assert fan_out.group_rounds(pairs, 1) == [
        [fan_out.group_label(p) for p in found]
        for found in fan_out.path_rounds(pairs)]


def test_every_sandbox_partition_measures_one_node_at_a_time():
    assert {p['name']: p['extras'][fan_out.AT_ONCE]
            for p in sandbox.system['partitions']} == {
        'hbv4': 1, 'hbv4-squeue': 1, 'ndv5': 1}


def test_a_sandbox_batch_job_runs_its_nodes_one_after_the_other(tmp_path):
    stages, _ = dry_run(tmp_path, 'sandbox:hbv4', '-n', '^HpccNode$',
                        '-P', f"pinned_nodes={','.join(NODES)}",
                        '--param-values-delim', ';',
                        checks=('checks/cpu/hpcc.py',))
    [stage] = stages.values()
    text = (stage / 'rfm_job.sh').read_text()
    body = text[text.index('(cd fanout/'):]
    steps = re.findall(r'^\(cd fanout/(\S+) && srun --nodes=1 --ntasks=2 '
                       r'--nodelist=(\S+) .*hpcc > step\.out', body, re.M)
    assert steps == [(n, n) for n in NODES]
    # each step, then wait: one node after the other
    assert re.findall(r'^(wait|\(cd fanout/\S+)', body, re.M) == [
        word for n in NODES for word in (f'(cd fanout/{n}', 'wait')]
