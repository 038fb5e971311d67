"""One ReFrame case per pair check and batch of ring pairs, for real on the
sandbox Slurm: the case's one job runs each pair as its own job step, in
rounds of pairs that share no node, and its rows and pair blame are those
the one-pair cases give (a node whose stand-in fails is bad with both
partners, its partners good). Plus the rounds and the plan on their own."""
import re

from checks.common import fan_out
from checks.common.time_limit import limit_seconds
from scripts.acceptance import plan, verdicts
from scripts.cli.sandbox import NODES
from tests.support.acceptance_runs import (batched_and_one_by_one,
                                           one_batch_job, pair_findings,
                                           stored)
from tests.support.helpers import DATA

NODES = list(NODES)
BROKEN = NODES[1]
#: OMB's real output of a run it refused (one process: empty stdout)
REFUSED = DATA / 'osu' / 'v5.3_osu_latency_np1_error.out'
LATENCY_ONLY = ['--checks', 'checks/network/osu.py', '--exclude',
                'OsuCollective', '--exclude', 'osu_bw', '--exclude',
                'osu_bibw', '--exclude', 'Spack', '--exclude', 'cuda']
ARGS = ['--system', 'sandbox', '--partition', 'hbv4', *LATENCY_ONLY,
        '--drain', '--dry-run', '--no-repair',
        # the batch against the one-by-one rows: no confirmation run beside
        '--confirm', '0']


# --- the rules on their own -------------------------------------------------

def test_ring_batches_are_paths_and_their_pairs_run_in_disjoint_rounds():
    ring = [f'n{i}' for i in range(7)]
    paths = plan.ring_paths(ring, 3)
    assert paths == [('n0', 'n1', 'n2', 'n3'), ('n3', 'n4', 'n5', 'n6'),
                     ('n6', 'n0')]
    # every ring pair once, in the ring's order
    assert [p for path in paths for p in fan_out.path_pairs(list(path))] \
        == plan.ring_pairs(ring)
    even = fan_out.path_rounds(fan_out.path_pairs(['a', 'b', 'c', 'd', 'a']))
    assert even == [[('a', 'b'), ('c', 'd')], [('b', 'c'), ('d', 'a')]]
    # a ring of five pairs: its closing pair shares a node with the first
    odd = fan_out.path_rounds(fan_out.path_pairs(list('abcdea')))
    assert odd == [[('a', 'b'), ('c', 'd')], [('b', 'c'), ('d', 'e')],
                   [('e', 'a')]]
    for found in (even, odd):
        for pairs in found:
            nodes = [n for pair in pairs for n in pair]
            assert len(nodes) == len(set(nodes))


def test_a_pair_step_is_placed_on_both_nodes_only():
    assert fan_out.step_launcher('srun', 'slurm', 1, None, ['--mpi=pmix'],
                                 ('hb-1', 'hb-2')) == [
        'srun', '--nodes=2', '--ntasks=2', '--nodelist=hb-1,hb-2',
        '--ntasks-per-node=1', '--mpi=pmix']
    assert fan_out.step_launcher('mpirun', 'pbs', 2, None, [],
                                 ('cn1', 'cn2')) == [
        'mpirun', '-np', '4', '--host', 'cn1:2,cn2:2']
    lines = fan_out.script_lines(['a+b', 'b+c'], {'a+b': ['s1'],
                                                  'b+c': ['s2']},
                                 'osu_latency', (), [['a+b'], ['b+c']])
    # the second round waits for the first
    assert lines[2:] == [
        '(cd fanout/a+b && s1 osu_latency > step.out 2> step.err; '
        'echo $? > exit_code) &', 'wait',
        '(cd fanout/b+c && s2 osu_latency > step.out 2> step.err; '
        'echo $? > exit_code) &']


def test_the_pair_phase_is_one_session_of_paths_and_one_of_pairs():
    ring = [f'hb-{i:04d}' for i in range(1, 1001)]
    pair = [p for p in plan.phases('azure', 'hbv4', ring)
            if p.scope == 'pair']
    # 32 paths of 33 names: two sessions of at most MAX_NAMES names
    assert [(p.label, len(p.pins), p.names) for p in pair] == [
        ('hbv4-pair-1of2', 30, plan.PAIR_FANOUT_CHECKS),
        ('hbv4-pair-2of2', 2, plan.PAIR_FANOUT_CHECKS)]
    # every pair check batches: no session of one pair per job
    assert plan.SINGLE_PAIR_CHECKS == ()
    assert pair[1].pins[-1][-1] == 'hb-0001'   # the ring closes
    assert [len(pin) for p in pair[:2] for pin in p.pins] == \
        [33] * 31 + [1000 - 31 * 32 + 1]
    single = [p for p in plan.phases('azure', 'hbv4', ring, node_batch=1)
              if p.scope == 'pair']
    assert sum(len(p.pins) for p in single) == 1000
    assert {p.names for p in single} == {()}


def pair_batch_case(**more):
    groups = ['a+b', 'b+c', 'c+d', 'd+a']
    perf = {f'latency@{g}': [v, 2.0, None, 0.5, 'us',
                             'pass' if v <= 3.0 else 'fail']
            for g, v in (('a+b', 1.9), ('b+c', 9.0), ('c+d', 2.1))}
    return {'name': 'OsuPointToPoint %benchmark=osu_latency',
            'display_name': 'OsuPointToPoint %benchmark=osu_latency '
                            '%pinned_nodes=a,b,c,d,a',
            'system': 'azure', 'partition': 'hbv4', 'environ': 'hpcx',
            'jobid': '9', 'pinned_nodes': ['a', 'b', 'c', 'd', 'a'],
            'job_nodes': ['a', 'b', 'c', 'd'], 'fans_out': True,
            'fanned_groups': groups, 'result': 'fail',
            'fail_phase': 'performance', 'fail_reason': 'reference not met',
            'perfvalues': {f'azure:hbv4:{k}': v for k, v in perf.items()},
            'metric_groups': {k: k.split('@')[1] for k in perf},
            'group_failures': {'d+a': 'osu output has no data rows'},
            'groups_not_measured': {}, **more}


def test_each_pair_of_a_batch_case_is_judged_as_a_one_pair_case():
    found = verdicts.case_findings(pair_batch_case(), {})
    assert sorted((f.node, f.partner, f.verdict, f.metric, f.value)
                  for f in found) == [
        ('a', 'b', 'pass', 'latency', 1.9),
        ('a', 'd', 'fail', None, None),
        ('b', 'a', 'pass', 'latency', 1.9),
        ('b', 'c', 'fail', 'latency', 9.0),
        ('c', 'b', 'fail', 'latency', 9.0),
        ('c', 'd', 'pass', 'latency', 2.1),
        ('d', 'a', 'fail', None, None),
        ('d', 'c', 'pass', 'latency', 2.1)]
    assert {f.scope for f in found} == {'pair'}
    nodes = {'azure:hbv4': {n: 'idle' for n in 'abcd'}}
    # each failing pair has one partner that failed once: both suspect
    assert {v.node: v.verdict for v in verdicts.node_verdicts(
        found, nodes)} == {'a': 'suspect', 'b': 'suspect', 'c': 'suspect',
                           'd': 'suspect'}


# --- for real ----------------------------------------------------------------

def pair_rows(env):
    """(check, metric, pair) -> what the row says, of the measured rows."""
    return {(r['check_name'], r['check_perf_var'],
             tuple(r['check_job_nodelist'])):
            (r['check_perf_value'], r['check_perf_result'],
             r['check_num_tasks'], r['check_perf_unit'],
             r['check_perf_ref'], r['reference_key'])
            for r in stored(env) if r['facility'] == 'reframe'
            and r['check_perf_value'] is not None}


def test_a_batch_of_pairs_blames_as_one_pair_cases_do(sandbox_env,
                                                      tmp_path):
    spelled = BROKEN.upper().replace('-', '_')
    env = {**sandbox_env,
           f'CLUSTERPROOF_REPLAY_OSU_LATENCY_WITH_{spelled}': str(REFUSED)}
    # the ring's three other pairs: too few peers, no reference: not judged
    batch, summary, single_summary, single_env = batched_and_one_by_one(
        env, tmp_path, ARGS, others='not_judged')
    assert pair_findings(summary) == pair_findings(single_summary)
    failed = [f for f in pair_findings(summary) if f[4] == 'fail']
    # the broken node with both partners, each partner once, blamed on it
    assert {(f[0], f[1], f[6]) for f in failed} == {
        *((BROKEN, n, False) for n in neighbours(BROKEN)),
        *((n, BROKEN, True) for n in neighbours(BROKEN))}
    assert all('sanity error' in f[5] for f in failed), failed
    # the same rows, pair by pair: every pair without the broken node
    rows = pair_rows(env)
    assert rows == pair_rows(single_env)
    ring = plan.ring_pairs(NODES)
    assert {frozenset(key[2]) for key in rows} == {
        frozenset(p) for p in ring if BROKEN not in p}
    assert {value[2] for value in rows.values()} == {2}

    # one case, one job, one step per pair, in rounds of disjoint pairs
    text = one_batch_job(batch, env, 'OsuPointToPoint').read_text()
    assert f'#SBATCH --ntasks={len(NODES)}' in text
    steps = re.findall(r'^\(cd fanout/(\S+) && srun --nodes=2 --ntasks=2 '
                       r'--nodelist=(\S+) --ntasks-per-node=1 .*osu_latency'
                       r' > step\.out', text, re.M)
    assert [group for group, _ in steps] == [
        '+'.join(p) for found in fan_out.path_rounds(ring) for p in found]
    assert all(group.replace('+', ',') == nodes for group, nodes in steps)
    rounds = len(fan_out.path_rounds(ring))
    # each round as long as one pair's run: the job's limit grows with them
    hours, minutes, seconds = re.search(r'^#SBATCH --time=(\d+):(\d+):(\d+)$',
                                        text, re.M).groups()
    assert int(hours) * 3600 + int(minutes) * 60 + int(seconds) == \
        limit_seconds(osu_runtime_s() * rounds, 3.0)
    body = text[text.index('(cd fanout/'):]
    assert body.count('\nwait\n') == rounds - 1 + 1   # between, and the end


def osu_runtime_s() -> float:
    import reframe  # noqa: F401  (the check modules need it)
    from checks.network.osu import OsuBase
    return OsuBase.expected_runtime_s


def neighbours(node):
    return {b if a == node else a for a, b in plan.ring_pairs(NODES)
            if node in (a, b)}
