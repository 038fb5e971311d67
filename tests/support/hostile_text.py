"""Inputs built to stall a parser: long runs of one pattern behind the first
lines of each tool's output, so that the parser gets past "is this my tool"
and every regular expression sees the run. Shared by the property tests and
tests/bench/parser_throughput.py."""
from __future__ import annotations

import random
import string

# The first line(s) of each tool's real output.
BANNERS = {
    'hpcc': 'HPC Challenge Benchmark\nBegin of Summary section.\n',
    'hpcg': 'HPCG-Benchmark\nversion=3.1\nFinal Summary::\n',
    'hpl': 'HPLinpack 2.3\nT/V                N    NB     P     Q\n',
    'ior': 'IOR-3.3.0: MPI Coordinated Test of Parallel I/O\n'
           'Summary of all tests:\n',
    'mpi-stage': '[0] Copy required: yes\n',
    'nccl': '# nccl-tests version 2.13.9\n#  size  count  type\n',
    'osu': '# OSU MPI Latency Test v7.4\n# Size          Latency (us)\n',
    'perftest': '                    RDMA_Write BW Test\n #bytes ',
    'stream': 'STREAM version $Revision: 5.10 $\n'
              'Function    Best Rate MB/s  Avg time\n',
    'nvbandwidth': 'nvbandwidth Version: v0.7\n'
                   'Running host_to_device_memcpy_ce.\n'
                   'memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n'
                   '           0         1\n 0 ',
    'babelstream': 'BabelStream\nVersion: 5.0\n'
                   'Function    MBytes/sec  Min (sec)   Max         Average\n',
    'gpu-burn': "Burning for 60 seconds.\n10.0%  proc'd: 10 (7150 Gflop/s) ",
    'dcgmi': '+---------------------------+------------------------------------'
             '------------+\n| Diagnostic                | Result          '
             '                               |\n',
    'nvlink': 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n',
    'nvidia-smi': '==============NVSMI LOG==============\n'
                  'GPU 00000001:00:00.0\n',
}

# Runs that made regular expressions backtrack: blank lines, a line without
# the separator a pattern looks for, digits, colons, brackets.
RUNS = [' ', '\n', ' \n', '\n ', '\t', '1', '1 ', 'a', 'a ', ':', '::', 'a:',
        '-', '#', '.', '=', '[', 'a[', '[0] ', '0: ', 'HPCG ', 'Result ']


def hostile(tool: str, run: str, size: int) -> str:
    return BANNERS[tool] + run * (size // len(run))


def random_text(size: int, seed: int = 1) -> str:
    """Printable characters and whitespace (a newline every ~100)."""
    return ''.join(random.Random(seed).choices(string.printable, k=size))
