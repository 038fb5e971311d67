"""`clusterproof acceptance` for real on the five-node sandbox Slurm: one
node's STREAM stand-in replays a real but throttled output, one node's HCA
is missing for the perftest stand-in, a tool is missing, the scheduler is
unreachable; plus the planning and judging rules on their own."""
import re
import subprocess

from scripts.acceptance import plan, session, slurm, verdicts
from scripts.cli import sandbox
from tests.support.acceptance_runs import (LOW_STREAM, NODES,
                                           PAIR_REFRAME_ARGS,
                                           PERFTEST_PAIR_ONLY, STREAM_ONLY,
                                           acceptance, expected, node_state,
                                           stored, verdict_of)
from tests.support.helpers import suite_env


# --- the rules on their own -------------------------------------------------

def test_ring_pairs_give_every_node_two_partners():
    assert plan.ring_pairs(['a']) == []
    assert plan.ring_pairs(['a', 'b']) == [('a', 'b')]
    pairs = plan.ring_pairs(NODES)
    assert pairs == [('sb-n1', 'sb-n2'), ('sb-n2', 'sb-n3'),
                     ('sb-n3', 'sb-n4'), ('sb-n4', 'sb-n5'), ('sb-n5', 'sb-n1')]
    for node in NODES:
        partners = {b if a == node else a for a, b in pairs if node in (a, b)}
        assert len(partners) == 2


def test_pins_travel_as_one_reframe_parameter():
    # every pair check batches; --node-batch 1: one pin per pair
    [batch] = [p for p in plan.phases('sandbox', 'hbv4', NODES[:3])
               if p.scope == 'pair']
    [phase] = [p for p in plan.phases('sandbox', 'hbv4', NODES[:3],
                                      node_batch=1) if p.scope == 'pair']
    options = plan.reframe_options(phase, plan.Selection(checks=['checks']),
                                   'r.json', 'prefix', retries=2)
    assert options[options.index('-P') + 1] == \
        'pinned_nodes=sb-n1,sb-n2;sb-n2,sb-n3;sb-n3,sb-n1'
    # the pair checks that run a batch of pairs in one job: one path
    batched = plan.reframe_options(batch, plan.Selection(checks=['checks']),
                                   'r.json', 'prefix', retries=2)
    assert batched[batched.index('-P') + 1] == \
        'pinned_nodes=sb-n1,sb-n2,sb-n3,sb-n1'
    assert options[options.index('--param-values-delim') + 1] == ';'
    assert options[options.index('--max-retries') + 1] == '2'
    assert plan.phases('pbs', 'q', None)[0].scope == 'unpinned'


def test_collectives_run_once_over_every_node():
    phases = plan.phases('sandbox', 'hbv4', NODES)
    # the batch-job node checks, the one-node ones, pairs, the set, the rest
    assert [p.label for p in phases] == ['hbv4-node', 'hbv4-node-one',
                                         'hbv4-pair',
                                         'hbv4-set', 'hbv4-whole']
    assert phases[0].pins == [tuple(NODES)]
    assert phases[1].pins == [(node,) for node in NODES]
    phases = [p for p in phases if p.tag != 'one']
    options = plan.reframe_options(phases[2], plan.Selection(checks=['c']),
                                   'r.json', 'prefix', retries=0)
    # every node, as one Slurm host range
    assert options[options.index('-P') + 1] == \
        f'pinned_nodes={sandbox.NODE_LIST}'
    assert f'OsuCollective.num_nodes={len(NODES)}' in options
    assert f'NcclMultiNode.num_nodes={len(NODES)}' in options
    whole = plan.reframe_options(phases[3], plan.Selection(checks=['c']),
                                 'r.json', 'prefix', retries=0)
    assert 'OsuCollective' in whole[whole.index('-x') + 1]


def test_slurm_node_states_and_partition():
    states = slurm.parse_node_states(
        'sb-n1 idle\nsb-n2 drained\nsb-n3 idle*\nsb-n1 idle\nsb-n4 mixed\n')
    assert states == {'sb-n1': 'idle', 'sb-n2': 'drained',
                      'sb-n3': 'idle*', 'sb-n4': 'mixed'}
    assert [n for n, s in states.items() if slurm.is_usable(s)] == \
        ['sb-n1', 'sb-n4']
    assert slurm.partition_from_access(['--partition=hpc']) == 'hpc'
    assert slurm.partition_from_access(['-p', 'gpu', '--exclusive']) == 'gpu'
    assert slurm.partition_from_access(['--exclusive']) is None


def pair_case(a, b, result, reason=None):
    return {'name': 'PerftestPair %benchmark=ib_write_bw',
            'display_name': f'PerftestPair %benchmark=ib_write_bw '
                            f'%.pinned_nodes={a},{b}',
            'system': 'sb', 'partition': 'p', 'environ': 'builtin',
            'result': result, 'fail_phase': 'sanity' if reason else None,
            'fail_reason': reason, 'pinned_nodes': [a, b],
            'job_nodes': [a, b], 'job_exitcode': 0,
            'perfvalues': {}}


def judge(cases, nodes):
    findings = [f for c in verdicts.final_cases({'runs': [
        {'testcases': cases}]}) for f in verdicts.case_findings(c, {})]
    return {v.node: v.verdict for v in verdicts.node_verdicts(
        findings, {'sb:p': {n: 'idle' for n in nodes}})}


def test_a_node_failing_with_two_partners_is_the_bad_one():
    cases = [pair_case(a, b, 'fail' if 'sb-n2' in (a, b) else 'pass',
                       'sanity error: IB device not found'
                       if 'sb-n2' in (a, b) else None)
             for a, b in plan.ring_pairs(NODES)]
    assert judge(cases, NODES) == expected('good', {'sb-n2': 'bad'})


def test_one_failing_pair_cannot_say_which_node():
    cases = [pair_case('sb-n1', 'sb-n2', 'fail', 'sanity error: x')]
    assert judge(cases, NODES[:2]) == {'sb-n1': 'suspect',
                                       'sb-n2': 'suspect'}


def test_a_node_slurm_cannot_use_or_no_check_reached_is_not_measured():
    cases = [{**pair_case('sb-n1', 'sb-n3', 'pass'), 'name': 'StreamCheck',
              'display_name': 'StreamCheck %.pinned_nodes=sb-n1',
              'pinned_nodes': ['sb-n1'], 'job_nodes': ['sb-n1']}]
    findings = [f for c in verdicts.final_cases({'runs': [
        {'testcases': cases}]}) for f in verdicts.case_findings(c, {})]
    judged = verdicts.node_verdicts(findings, {'sb:p': {
        'sb-n1': 'idle', 'sb-n2': 'drained', 'sb-n3': 'idle'}})
    assert [(v.node, v.verdict, v.findings[0].reason) for v in judged] == [
        ('sb-n2', 'not_measured', 'Slurm state drained: no job can run '
                                  'there'),
        ('sb-n3', 'not_measured', 'no check reached this node'),
        ('sb-n1', 'good', '')]


def test_retries_judge_the_last_attempt():
    first = pair_case('sb-n1', 'sb-n2', 'fail', 'sanity error: x')
    again = pair_case('sb-n1', 'sb-n2', 'pass')
    cases = verdicts.final_cases({'runs': [{'testcases': [first]},
                                           {'testcases': [again]}]})
    assert [(c['result'], c['attempts']) for c in cases] == [('pass', 2)]


def test_more_bad_nodes_than_max_drain_drains_nothing():
    bad = [verdicts.NodeVerdict(n, 'sb:p', verdicts.BAD, [verdicts.Finding(
        n, 'sb:p', 'StreamCheck', verdicts.FAIL, metric='triad_bw',
        value=1.0, unit='MB/s', reference=2.0, confirmations=['fail'])])
        for n in NODES[:2]]
    drains, notes = session.plan_drains(bad, None, {'sb:p'})
    assert drains == [] and 'nothing drained' in notes[0]
    drains, _ = session.plan_drains(bad, 2, {'sb:p'})
    assert [d['node'] for d in drains] == ['sb-n1', 'sb-n2']
    assert drains[0]['reason'] == ('clusterproof acceptance: StreamCheck '
                                   'triad_bw=1 MB/s ref 2 MB/s')


def test_sync_is_skipped_without_azure(monkeypatch):
    for name in ('DATA_COLLECTION_ENDPOINT', 'LOGS_DCR_RULE_ID'):
        monkeypatch.delenv(name, raising=False)
    from scripts.cli import main as cli
    called = []
    monkeypatch.setattr(cli, 'main', lambda argv: called.append(argv))
    said = []
    assert session.ship_results(said.append) == 'not configured'
    assert called == [] and 'stay in the local store' in said[0]


# --- for real ----------------------------------------------------------------


def test_low_stream_node_is_named_with_its_numbers(sandbox_env):
    env = {**sandbox_env, 'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N3':
           str(LOW_STREAM)}
    result, summary = acceptance(env, '--system', 'sandbox', '--partition',
                                 'hbv4', *STREAM_ONLY, '--retry-failed', '1',
                                 '--', '-S', 'array_size=20000000')
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert verdict_of(summary) == expected('good', {'sb-n3': 'bad'})
    table = out[re.search(r'^node +check +metric', out, re.M).start():]
    first = table.splitlines()[1].split()
    assert first[0] == 'sb-n3' and first[1] == 'StreamCheck'
    assert re.search(r'^sb-n3 +StreamCheck +triad_bw +1190\.4 MB/s +8000 '
                     r'MB/s +bad +below the lower bound 8000 \(attempt 2\)',
                     table, re.M)
    # re-measured once before being judged: STREAM runs the four nodes as
    # one batch job (--node-batch), so the batch ran again as a whole
    attempts = {n['node']: {f['attempts'] for f in n['findings']}
                for n in summary['nodes']}
    assert attempts == {node: {2} for node in NODES}
    # the rows name the node the job ran on, as the job recorded it
    rows = [r for r in stored(env) if r['check_perf_var'] == 'triad_bw']
    by_node = {tuple(r['check_job_nodelist']): r for r in rows}
    assert set(by_node) == {(n,) for n in NODES}
    assert by_node[('sb-n3',)]['check_perf_value'] == 1190.4
    assert by_node[('sb-n3',)]['check_perf_result'] == 'fail'
    assert by_node[('sb-n1',)]['check_perf_value'] == 12369.6
    assert by_node[('sb-n1',)]['check_perf_result'] == 'pass'


def test_bad_hca_is_blamed_on_its_node_then_drained(sandbox_env):
    env = {**sandbox_env, 'CLUSTERPROOF_STANDIN_HCAS_SB_N2': 'mlx5_ib1'}
    args = ['--system', 'sandbox', '--partition', 'hbv4',
            *PERFTEST_PAIR_ONLY, '--drain']
    result, summary = acceptance(env, *args, '--dry-run',
                                 *PAIR_REFRAME_ARGS)
    assert result.returncode == 1, result.stdout + result.stderr
    # the ring's three other pairs: too few peers, no reference
    assert verdict_of(summary) == expected('not_judged', {'sb-n2': 'bad'})
    assert 'would run: scontrol update nodename=sb-n2 state=drain' \
        in result.stdout
    assert 'IB device mlx5_ib0 not found' in result.stdout
    assert node_state('sb-n2') == 'idle'

    result, summary = acceptance(env, *args, *PAIR_REFRAME_ARGS)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'drained sb-n2' in result.stdout
    assert [n for n in NODES if node_state(n) != 'idle'] == ['sb-n2']
    reason = subprocess.run(['sinfo', '-h', '-R', '-n', 'sb-n2', '-o', '%E'],
                            capture_output=True, text=True).stdout
    assert reason.startswith('clusterproof acceptance: PerftestPair')
    assert summary['drain'][0]['node'] == 'sb-n2'


def test_missing_tool_is_not_measured_and_never_drained(sandbox_env):
    result, summary = acceptance(
        sandbox_env, '--system', 'sandbox', '--partition', 'hbv4',
        *STREAM_ONLY, '--drain', '--', '-S', 'tool_binary=/nonexistent')
    assert result.returncode == 1, result.stdout + result.stderr
    assert verdict_of(summary) == {n: 'not_measured' for n in NODES}
    assert 'drained' not in result.stdout
    assert [node_state(n) for n in NODES] == ['idle'] * len(NODES)
    rows = [r for r in stored(sandbox_env)
            if r['check_perf_result'] == 'not_measured']
    assert sorted(r['check_job_nodelist'][0] for r in rows) == NODES
    assert all('/nonexistent not found on node' in r['check_fail_reason']
               for r in rows)
    assert {r['check_name'] for r in rows} == {'StreamCheck'}


def test_a_job_no_node_can_hold_is_skipped_not_measured(sandbox_env):
    # The shipped HBv4 method asks for 48 threads: on the sandbox's 2-CPU
    # nodes Slurm would keep such a job pending forever (PartitionConfig),
    # so it is skipped at submission, saying why.
    env = {k: v for k, v in sandbox_env.items()
           if k != 'CLUSTERPROOF_REFERENCES'}
    result, summary = acceptance(env, '--system', 'sandbox', '--partition',
                                 'hbv4', *STREAM_ONLY, '--drain')
    assert result.returncode == 1, result.stdout + result.stderr
    assert verdict_of(summary) == {n: 'not_measured' for n in NODES}
    assert 'drained' not in result.stdout
    assert 'StreamCheck asks for 48 CPUs per task, but the nodes of ' \
        'sandbox:hbv4 have 2' in result.stdout


def test_a_job_still_pending_is_given_up_not_measured(sandbox_env):
    # Every node busy with another job: --max-pending gives up the wait.
    blocker = subprocess.run(
        ['sbatch', '--parsable', '-p', 'hbv4', '-N', str(len(NODES)),
         '--exclusive',
         '-o', '/dev/null', '--wrap', 'sleep 600'], env=sandbox_env,
        capture_output=True, text=True, check=True).stdout.strip()
    try:
        result, summary = acceptance(sandbox_env, '--system', 'sandbox',
                                     '--partition', 'hbv4', *STREAM_ONLY,
                                     '--drain', '--max-pending', '15s')
    finally:
        subprocess.run(['scancel', blocker], env=sandbox_env, check=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert verdict_of(summary) == {n: 'not_measured' for n in NODES}
    assert 'drained' not in result.stdout
    assert 'the job never ran on the node' in result.stdout
    queued = subprocess.run(['squeue', '-h', '-o', '%i'], capture_output=True,
                            env=sandbox_env, text=True).stdout.split()
    assert queued in ([], [blocker])


def test_broken_scheduler_exits_2_and_drains_nothing(sandbox_env, tmp_path):
    # the controller unreachable: a client configuration with its port moved
    conf = open(sandbox_env['SLURM_CONF']).read()
    dead = re.sub(r'^SlurmctldPort=\d+', 'SlurmctldPort=9', conf, flags=re.M)
    (tmp_path / 'slurm.conf').write_text(dead)
    env = {**sandbox_env, 'SLURM_CONF': str(tmp_path / 'slurm.conf')}
    result, summary = acceptance(env, '--system', 'sandbox', '--partition',
                                 'hbv4', *STREAM_ONLY, '--drain')
    assert result.returncode == 2, result.stdout + result.stderr
    assert 'the run itself broke; no node is judged' in result.stdout
    assert summary['nodes'] == [] and summary['drain'] == []
    assert summary['broken']
    assert [node_state(n) for n in NODES] == ['idle'] * len(NODES)


def test_without_slurm_it_says_so_and_a_skip_is_not_measured(tmp_path):
    # the new user's typo: every check skipped must not look green
    env = suite_env(tmp_path / 'home')
    result, summary = acceptance(env, '--system', 'local', *STREAM_ONLY,
                                 '--', '-S', 'tool_binary=/nonexistent')
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'only Slurm can list nodes' in result.stdout
    found = summary['partition_findings']
    assert [f['verdict'] for f in found] == ['not_measured']
    assert '/nonexistent not found at that path' in found[0]['reason']
    rows = stored(env)
    assert [r['check_perf_result'] for r in rows] == ['not_measured']


def test_bad_usage_exits_2(tmp_path):
    result, _ = acceptance(suite_env(tmp_path / 'home'), '--dry-run')
    assert result.returncode == 2
    assert '--dry-run only makes sense with --drain' in result.stderr
