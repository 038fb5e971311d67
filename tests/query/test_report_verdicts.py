"""The report's first screen is acceptance's verdicts: after a real
acceptance run on the five-node sandbox (STREAM, no reference: peers
judge; sb-n3 16% slow every time, so bad and confirmed; sb-n1 slow once,
so flaky), `clusterproof report` opens, in headless Chromium, on a grid of
nodes and checks whose verdicts are the summary's, each bad cell linked to
its evidence. The grid's rules on their own (rows in, grid out) follow."""
from tests.query.test_report import Dom
from tests.support.acceptance_runs import (BUSY_STREAM, SANDBOX_METHOD,
                                           STREAM_ONLY, acceptance,
                                           no_references)
from tests.support.browser import headless
from tests.support.cli_runs import cli
from tests.support.helpers import DATA

from scripts.report import verdicts

NORMAL_STREAM = DATA / 'stream' / 'stream_c_omp2_20M.out'


def test_the_first_screen_is_acceptances_verdict_grid(sandbox_env, chromium,
                                                       tmp_path):
    state = tmp_path / 'standin-state'
    state.mkdir()
    env = {**no_references(sandbox_env),
           'CLUSTERPROOF_STANDIN_STATE': str(state),
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N3': str(BUSY_STREAM),
           'CLUSTERPROOF_REPLAY_STREAM_C_EXE_SB_N1':
               f'{BUSY_STREAM}:{NORMAL_STREAM}'}
    result, summary = acceptance(env, '--system', 'sandbox', '--partition',
                                 'hbv4', *STREAM_ONLY, *SANDBOX_METHOD)
    assert result.returncode == 1, result.stdout + result.stderr
    said = {n['node']: n['verdict'] for n in summary['nodes']}
    assert said['sb-n3'] == 'bad' and said['sb-n1'] == 'flaky', said

    out = tmp_path / 'report.html'
    report_env = {k: v for k, v in env.items() if k != 'LOGS_WORKSPACE_ID'}
    done = cli('report', '--out', str(out), env=report_env)
    assert done.returncode == 0, done.stderr
    assert 'acceptance verdicts of 5 node(s)' in done.stdout
    shown = headless(chromium, '--dump-dom', out.as_uri(),
                     profile=tmp_path / 'profile')
    assert shown.returncode == 0, shown.stderr[-2000:]
    dom = Dom(shown.stdout)

    # first: the grid, before every other table and section
    headings = [a.get('id') for a, _ in dom.find('h2')]
    assert headings[0] == 'verdicts', headings
    tables = dom.find('table')
    assert 'grid' in tables[0][0].get('class', '').split()
    # its verdicts are the summary's, node by node, worst first
    rows = [(a, s) for a, s in dom.find('th', 'node')]
    assert {a['data-verdict'] for a, _ in rows} <= set(verdicts.VERDICTS)
    grid_nodes = [a['data-verdict'] for a, _ in rows]
    assert sorted(grid_nodes) == sorted(said.values())
    assert grid_nodes[0] == 'bad'
    cells = [a['data-verdict'] for a, _ in dom.find('td', 'cell')
             if a.get('data-check') == 'StreamCheck']
    assert sorted(cells) == sorted(said.values())  # one check: one per node
    counts = ' '.join(dom.text_in('verdicts'))
    numbers = summary['counts']['nodes']
    assert (f"{numbers['bad']} bad, {numbers['suspect']} suspect, "
            f"{numbers['flaky']} flaky, {numbers['not_judged']} not judged"
            in ' '.join(t for _, t in dom.texts)), counts
    # each bad cell links to its evidence, which says what acceptance said
    links = [a['href'] for a, stack in dom.find('a')
             if a.get('href', '').startswith('#evidence-')]
    evidence = {a['id']: a for a, _ in dom.find('tr')
                if a.get('id', '').startswith('evidence-')}
    assert links and all(link[1:] in evidence for link in links)
    bad = [i for i, a in evidence.items() if a['data-verdict'] == 'bad']
    [bad_anchor] = bad
    assert 'sb-n3' in bad_anchor
    bad_text = ' '.join(dom.text_in(bad_anchor))
    assert "peers: 16.1% below the 4 peers' median" in bad_text
    assert 'measured again: fail (peers: ' in bad_text
    flaky = [i for i, a in evidence.items() if a['data-verdict'] == 'flaky']
    assert len(flaky) == 1 and 'sb-n1' in flaky[0]
    # the long tables after it agree: sb-n1's flag did not repeat
    bad_nodes = ' '.join(dom.text_in('bad-nodes'))
    assert 'sb-n3' in bad_nodes and 'sb-n1' not in bad_nodes


SUMMARY = {
    'session_id': 's1', 'finished': '2026-12-05T10:00:00+00:00',
    'nodes': [
        {'node': 'n1', 'partition': 'c:p', 'verdict': 'bad', 'findings': [
            {'check': 'StreamCheck', 'verdict': 'fail', 'metric': 'triad_bw',
             'value': 8250.3, 'reference': 0.1042, 'unit': 'us',
             'basis': 'peers', 'reason': '7917948.7% above', 'set_aside': '',
             'confirmations': ['fail'], 'record_id': 'r1'},
            {'check': 'IorCheck', 'verdict': 'not_measured',
             'reason': 'tool missing: ior not found on node n1'}]},
        {'node': 'n2', 'partition': 'c:p', 'verdict': 'powered_down',
         'findings': [{'check': '(powered down)', 'verdict': 'powered_down',
                       'reason': 'powered down'}]},
        {'node': 'n3', 'partition': 'c:p', 'verdict': 'good', 'findings': [
            {'check': 'StreamCheck', 'verdict': 'pass', 'metric': 'triad_bw'},
            {'check': 'IorCheck', 'verdict': 'pass'}]}]}


def test_the_grid_of_a_summary():
    [grid] = verdicts.grids_of_summaries([SUMMARY])
    assert grid.checks == ['IorCheck', 'StreamCheck']
    assert list(grid.nodes.items()) == [('n1', 'bad'),
                                        ('n2', 'powered_down'),
                                        ('n3', 'good')]
    assert grid.cells == {
        ('n1', 'IorCheck'): 'not_measured', ('n1', 'StreamCheck'): 'bad',
        ('n2', 'IorCheck'): 'powered_down',
        ('n2', 'StreamCheck'): 'powered_down',
        ('n3', 'IorCheck'): 'good', ('n3', 'StreamCheck'): 'good'}
    # a value 79,000 times its peers' median is no measurement of a node
    [line] = grid.evidence[('n1', 'StreamCheck')].lines
    assert 'implausible value' in line and '7917948' not in line
    assert verdicts.judged_records([SUMMARY]) == {'r1'}


def test_the_grid_of_rows_where_no_summary_is_at_hand():
    rows = [{'check_system': 'c', 'check_partition': 'p', 'node': 'n1',
             'check_name': 'IorCheck', 'check_result': 'fail',
             'check_fail_reason': 'ior not found on node n1',
             'completed': '2026-12-05'},
            {'check_system': 'c', 'check_partition': 'p', 'node': 'n1',
             'check_name': 'StreamCheck', 'check_result': 'fail',
             'verdict_basis': 'peers', 'check_fail_reason': '16.1% below',
             'completed': '2026-12-05'},
            {'check_system': 'c', 'check_partition': 'p', 'node': 'n2',
             'check_name': 'StreamCheck', 'check_result': 'pass',
             'completed': '2026-12-05'}]
    [grid] = verdicts.grids_of_rows(rows)
    assert grid.cells == {('n1', 'IorCheck'): 'not_measured',
                          ('n1', 'StreamCheck'): 'bad',
                          ('n2', 'StreamCheck'): 'good'}
    assert grid.nodes == {'n1': 'bad', 'n2': 'good'}
    assert grid.evidence[('n1', 'StreamCheck')].lines == [
        'peers: 16.1% below']
