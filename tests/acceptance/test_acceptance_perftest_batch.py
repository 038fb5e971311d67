"""perftest in batch jobs, for real on the sandbox Slurm: one case per
check and batch runs the pair script once per node (PerftestLoopback) or
per ring pair (PerftestPair, in rounds of disjoint pairs) from the batch
shell, each group in its own directory with its own ports, and its rows
and verdicts are those the one-node and one-pair cases give (a node
without the HCA is bad, its partners good)."""
import re

from checks.common import fan_out
from scripts.acceptance import plan
from scripts.cli.sandbox import NODES
from tests.support.acceptance_runs import (batched_and_one_by_one, changes,
                                           comparable, one_batch_job,
                                           pair_findings, stored)

NODES = list(NODES)
BROKEN = NODES[1]
ARGS = ['--system', 'sandbox', '--partition', 'hbv4', '--checks',
        'checks/network/perftest.py', '--exclude', 'ib_send', '--drain',
        '--dry-run', '--no-repair',
        # the batch against the one-by-one rows: no confirmation run beside
        '--confirm', '0', '--', '-S', 'hcas=mlx5_ib0',
        '-S', 'pair_timeout=30',
        # ports no other perftest test takes (all sandbox nodes: one host)
        '-S', 'base_port=24515',
        # the one-node cases share the one host's ports: one at a time
        '--exec-policy', 'serial']


def any_port(text):
    """A batch's groups listen on ports of their own: a reason naming the
    port names another one than the one-pair case's."""
    return re.sub(r'port \d+', 'port P', text) if isinstance(text, str) \
        else text


def rows_by_group(env):
    """(check, metric, nodes) -> the row, less what differs per run."""
    return {(r['check_name'], r['check_perf_var'],
             tuple(r['check_job_nodelist'])):
            {k: any_port(v) for k, v in comparable(r).items()}
            for r in stored(env) if r['facility'] == 'reframe'}


def findings_of(summary):
    return [tuple(any_port(v) for v in f) for f in pair_findings(summary)]


def test_perftest_batches_give_the_one_node_and_one_pair_rows(sandbox_env,
                                                              tmp_path):
    spelled = BROKEN.upper().replace('-', '_')
    # the broken node knows another HCA only: perftest fails there
    env = {**sandbox_env, f'CLUSTERPROOF_STANDIN_HCAS_{spelled}': 'mlx5_ib1'}
    # the four other loopbacks and the ring's three other pairs: too few
    # peers, and no reference: not judged
    batch, summary, single_summary, single_env = batched_and_one_by_one(
        env, tmp_path, [], ARGS, others='not_judged')
    assert findings_of(summary) == findings_of(single_summary)
    failed = {(f[0], f[2].split()[0]) for f in pair_findings(summary)
              if f[4] == 'fail'}
    assert (BROKEN, 'PerftestLoopback') in failed
    assert all('IB device mlx5_ib0 not found' in f[5]
               for f in pair_findings(summary) if f[4] == 'fail'), summary
    # every row (measured or not) as the one-node or one-pair job writes it
    rows, single_rows = rows_by_group(env), rows_by_group(single_env)
    assert set(rows) == set(single_rows)
    assert {key: changes(row, single_rows[key])
            for key, row in rows.items() if row != single_rows[key]} == {}
    measured = {key for key, row in rows.items()
                if row['check_perf_value'] is not None}
    ring = plan.ring_pairs(NODES)
    assert {frozenset(key[2]) for key in measured
            if key[0].startswith('PerftestPair')} == {
        frozenset(pair) for pair in ring if BROKEN not in pair}
    assert {key[2] for key in measured
            if key[0].startswith('PerftestLoopback')} \
        == {(n,) for n in NODES if n != BROKEN}
    assert {rows[key]['check_num_tasks'] for key in measured} == {1, 2}

    # one case per check: the script once per group, from the batch shell
    loopback = one_batch_job(batch, env, 'PerftestLoopback').read_text()
    runs = re.findall(r'^\(cd fanout/(\S+) && bash perftest_hcas\.sh (\S+) '
                      r'(\S+) (\d+) > step\.out', loopback, re.M)
    # one HCA each: every node's port differs from the others'
    assert runs == [(n, n, n, str(i)) for i, n in enumerate(NODES)]
    pairs = one_batch_job(batch, env, 'PerftestPair').read_text()
    runs = re.findall(r'^\(cd fanout/(\S+) && bash perftest_hcas\.sh (\S+) '
                      r'(\S+) (\d+) > step\.out', pairs, re.M)
    assert [(label, (server, client)) for label, server, client, _ in runs] \
        == [('+'.join(p), p) for found in fan_out.path_rounds(ring)
            for p in found]
    assert len({shift for *_, shift in runs}) == len(runs)
    # each pair's client output in its own directory
    stage = one_batch_job(batch, env, 'PerftestPair').parent
    good = '+'.join(next(p for p in ring if BROKEN not in p))
    assert 'BW average' in (stage / 'fanout' / good / 'mlx5_ib0.out'
                            ).read_text()
