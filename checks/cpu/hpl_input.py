"""What an HPL run is given: process grid, problem size and HPL.dat text.

Pure functions, so the check's choices can be tested without ReFrame.
"""
from __future__ import annotations

import math

DOUBLE_BYTES = 8


def process_grid(tasks: int) -> tuple[int, int]:
    """P x Q == tasks, as square as the divisors allow, with P <= Q
    (HPL favours grids a little wider than tall)."""
    if tasks < 1:
        raise ValueError(f'HPL needs at least one MPI task, got {tasks}')
    p = math.isqrt(tasks)
    while tasks % p:
        p -= 1
    return p, tasks // p


def problem_size(memory_bytes: float, memory_fraction: float, nb: int) -> int:
    """Largest N, a multiple of NB, whose N x N matrix of doubles takes at
    most ``memory_fraction`` of ``memory_bytes`` (all nodes together)."""
    if not 0 < memory_fraction < 1:
        raise ValueError(f'memory fraction must be in (0, 1), '
                         f'got {memory_fraction}')
    n = int(math.sqrt(memory_fraction * memory_bytes / DOUBLE_BYTES))
    return n - n % nb


def problem_size_command(memory_fraction: float, nb: int, nodes: int,
                         meminfo: str = '/proc/meminfo') -> str:
    """Shell command printing :func:`problem_size` for ``nodes`` nodes like
    the one it runs on (MemTotal is in KiB)."""
    program = ('/^MemTotal:/ {n = int(sqrt(f * $2 * 1024 * nodes / '
               f'{DOUBLE_BYTES})); print n - n % nb}}')
    return (f"awk -v f={memory_fraction} -v nb={nb} -v nodes={nodes} "
            f"'{program}' {meminfo}")


def hpl_dat(n: int | str, nb: int, p: int, q: int,
            threshold: float = 16.0) -> str:
    """HPL.dat for one problem on one P x Q grid. ``n`` may be a shell
    expansion such as ``$N`` when the size is computed on the node.

    The algorithmic choices are HPL's usual ones for current CPUs: right-
    looking panel factorisation, Crout recursion, increasing-ring-modified
    broadcast, look-ahead depth 1, mixed swapping, transposed L1 and U.
    """
    lines = [
        ('HPLinpack benchmark input file', ''),
        (f'clusterproof: N={n} NB={nb} grid {p}x{q}', ''),
        ('HPL.out', 'output file name (if any)'),
        ('6', 'device out (6=stdout,7=stderr,file)'),
        ('1', '# of problems sizes (N)'),
        (str(n), 'Ns'),
        ('1', '# of NBs'),
        (str(nb), 'NBs'),
        ('0', 'PMAP process mapping (0=Row-,1=Column-major)'),
        ('1', '# of process grids (P x Q)'),
        (str(p), 'Ps'),
        (str(q), 'Qs'),
        (f'{threshold}', 'threshold'),
        ('1', '# of panel fact'),
        ('2', 'PFACTs (0=left, 1=Crout, 2=Right)'),
        ('1', '# of recursive stopping criterium'),
        ('4', 'NBMINs (>= 1)'),
        ('1', '# of panels in recursion'),
        ('2', 'NDIVs'),
        ('1', '# of recursive panel fact.'),
        ('1', 'RFACTs (0=left, 1=Crout, 2=Right)'),
        ('1', '# of broadcast'),
        ('1', 'BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)'),
        ('1', '# of lookahead depth'),
        ('1', 'DEPTHs (>=0)'),
        ('2', 'SWAP (0=bin-exch,1=long,2=mix)'),
        ('64', 'swapping threshold'),
        ('0', 'L1 in (0=transposed,1=no-transposed) form'),
        ('0', 'U  in (0=transposed,1=no-transposed) form'),
        ('1', 'Equilibration (0=no,1=yes)'),
        ('8', 'memory alignment in double (> 0)'),
    ]
    return ''.join(f'{value:<14}{comment}'.rstrip() + '\n'
                   for value, comment in lines)


#: A starting NB per BLAS family (the block size its DGEMM runs best at on
#: current x86 cores); tune per site with -S nb=...
NB_BY_BLAS = {
    'mkl': 384,        # Intel MKL / mp_linpack on AVX-512
    'aocl': 384,       # AMD AOCL-BLIS on Zen 4
    'blis': 384,
    'openblas': 256,
}
DEFAULT_NB = 256


def block_size_for(blas_family: str) -> int:
    return NB_BY_BLAS.get(blas_family.lower(), DEFAULT_NB)


def _first_tokens(line: str, count: int) -> list[int]:
    return [int(token) for token in line.split()[:count]]


def read_hpl_dat(text: str) -> dict[str, list[int]]:
    """The sizes and grids of an HPL.dat, read by line position as HPL
    itself reads it. Raises ValueError for a file HPL would not accept."""
    lines = text.splitlines()
    if len(lines) < 12:
        raise ValueError(f'HPL.dat has {len(lines)} lines, HPL needs at '
                         'least 31')
    try:
        ns = _first_tokens(lines[5], int(lines[4].split()[0]))
        nbs = _first_tokens(lines[7], int(lines[6].split()[0]))
        grids = int(lines[9].split()[0])
        ps = _first_tokens(lines[10], grids)
        qs = _first_tokens(lines[11], grids)
    except (ValueError, IndexError) as error:
        raise ValueError(f'HPL.dat is malformed: {error}') from None
    return {'n': ns, 'nb': nbs, 'p': ps, 'q': qs}


def rows_not_asked_for(rows: list[dict], asked: dict[str, list[int]]) \
        -> list[str]:
    """Result rows whose N, NB, P or Q is not one the HPL.dat asked for
    (an old HPL.dat in the way, a binary that ignores its input...)."""
    found = []
    for row in rows:
        for key in ('n', 'nb', 'p', 'q'):
            if row[key] not in asked[key]:
                found.append(f"{key.upper()}={row[key]} (HPL.dat: "
                             f"{', '.join(map(str, asked[key]))})")
    return found


def expected_seconds(n: int, gflops: float) -> float:
    """Time of one HPL solve of order ``n`` at ``gflops``."""
    return (2 / 3 * n ** 3 + 2 * n ** 2) / (gflops * 1e9)
