"""The HPL.dat a run is given, and the grid and size it is derived from."""
import subprocess

import pytest

from checks.cpu import hpl_input
from checks.parsers import hpl
from tests.support import helpers

EXPECTED_DAT = """\
HPLinpack benchmark input file
clusterproof: N=3000 NB=128 grid 1x2
HPL.out       output file name (if any)
6             device out (6=stdout,7=stderr,file)
1             # of problems sizes (N)
3000          Ns
1             # of NBs
128           NBs
0             PMAP process mapping (0=Row-,1=Column-major)
1             # of process grids (P x Q)
1             Ps
2             Qs
16.0          threshold
1             # of panel fact
2             PFACTs (0=left, 1=Crout, 2=Right)
1             # of recursive stopping criterium
4             NBMINs (>= 1)
1             # of panels in recursion
2             NDIVs
1             # of recursive panel fact.
1             RFACTs (0=left, 1=Crout, 2=Right)
1             # of broadcast
1             BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1             # of lookahead depth
1             DEPTHs (>=0)
2             SWAP (0=bin-exch,1=long,2=mix)
64            swapping threshold
0             L1 in (0=transposed,1=no-transposed) form
0             U  in (0=transposed,1=no-transposed) form
1             Equilibration (0=no,1=yes)
8             memory alignment in double (> 0)
"""


def test_hpl_dat_text():
    # the same parameters as the corpus run hpl2.3_N3000_NB128_P1Q2_np2
    assert hpl_input.hpl_dat(3000, 128, 1, 2) == EXPECTED_DAT


def test_hpl_dat_takes_a_shell_expansion_for_n():
    text = hpl_input.hpl_dat('$N', 256, 11, 16)
    assert '$N            Ns\n' in text
    assert '11            Ps\n16            Qs\n' in text


@pytest.mark.parametrize('tasks,grid', [
    (1, (1, 1)), (2, (1, 2)), (4, (2, 2)), (7, (1, 7)), (120, (10, 12)),
    (176, (11, 16)), (352, (16, 22)), (368, (16, 23)), (48, (6, 8)),
])
def test_grid_uses_every_task(tasks, grid):
    p, q = hpl_input.process_grid(tasks)
    assert (p, q) == grid
    assert p * q == tasks and p <= q


def test_grid_needs_a_task():
    with pytest.raises(ValueError):
        hpl_input.process_grid(0)


def test_problem_size_fills_the_fraction_in_whole_blocks():
    # 768 GiB at 80 %: sqrt(0.8 * 768 * 2**30 / 8) = 287107.6 -> 286976
    n = hpl_input.problem_size(768 * 2**30, 0.8, 256)
    assert n == 286976 and n % 256 == 0
    assert n * n * 8 <= 0.8 * 768 * 2**30 < (n + 256) ** 2 * 8


def test_problem_size_rejects_silly_fractions():
    with pytest.raises(ValueError):
        hpl_input.problem_size(2**30, 1.5, 128)


def test_shell_command_computes_the_same_size(tmp_path):
    meminfo = tmp_path / 'meminfo'
    meminfo.write_text('MemTotal:       24609436 kB\nMemFree:  1 kB\n')
    command = hpl_input.problem_size_command(0.8, 192, 2, str(meminfo))
    printed = subprocess.run(command, shell=True, check=True,
                             capture_output=True, text=True).stdout
    expected = hpl_input.problem_size(24609436 * 1024 * 2, 0.8, 192)
    assert int(printed) == expected == 70848


def test_generated_grid_satisfies_the_parser_task_check():
    # a run on the generated grid passes the parser's task-count check
    p, q = hpl_input.process_grid(2)
    text = (helpers.DATA / 'hpl'
            / 'hpl2.3_N3000_NB128_P1Q2_np2_PASSED.out').read_text()
    assert (p, q) == (1, 2)
    assert hpl.parse(text, expected_tasks=p * q).ok


def test_generated_hpl_dat_reads_back_by_line_position():
    text = hpl_input.hpl_dat(3000, 128, 1, 2)
    assert len(text.splitlines()) == 31
    assert hpl_input.read_hpl_dat(text) == {'n': [3000], 'nb': [128],
                                            'p': [1], 'q': [2]}


def test_a_malformed_hpl_dat_is_refused():
    lines = hpl_input.hpl_dat(3000, 128, 1, 2).splitlines()
    lines[5] = 'Ns'                                   # no value
    with pytest.raises(ValueError, match='malformed'):
        hpl_input.read_hpl_dat('\n'.join(lines))
    with pytest.raises(ValueError, match='lines'):
        hpl_input.read_hpl_dat('HPLinpack\n1\n')


def test_rows_of_another_problem_are_named():
    asked = {'n': [3000], 'nb': [128], 'p': [1], 'q': [2]}
    rows = [{'n': 3000, 'nb': 128, 'p': 1, 'q': 2},
            {'n': 4000, 'nb': 128, 'p': 2, 'q': 1}]
    assert hpl_input.rows_not_asked_for(rows, asked) == [
        'N=4000 (HPL.dat: 3000)', 'P=2 (HPL.dat: 1)', 'Q=1 (HPL.dat: 2)']
    assert hpl_input.rows_not_asked_for(rows[:1], asked) == []


def test_expected_seconds_of_a_solve():
    # 2/3 N^3 + 2 N^2 flops at 1 Gflops
    assert hpl_input.expected_seconds(1000, 1.0) == pytest.approx(
        (2 / 3 * 1e9 + 2e6) / 1e9)
