"""Which metrics judge a node: the primary metrics of each check class.

A check measures more than it is judged on. HpccNode prints eight numbers,
a small FFT and a shared-memory ping-pong among them; an ND node's perftest
gives three numbers per HCA. Every extra judged number is one more chance
for a healthy node to be flagged, so each check class names the few
metrics that say whether a node is fit for its work (the issue's list: the
STREAM triad, HPL and HPCG Gflop/s, NCCL bus bandwidth at the largest size,
perftest bandwidth per HCA, OSU bandwidth at its largest size and latency
at 8 B, HpccNode's HPL and STREAM, the GPU checks' per-GPU bandwidth and
Gflop/s). Every other metric is recorded only: it is stored, trended and
shown by ``query node_outliers --all``, never a reason to call a node bad.

Each primary metric has a default healthy spread: the relative standard
deviation peers assume for it where no site baseline has measured it. It
is a floor under the spread the peers show (the MAD floor of peers.py),
not a tolerance: a tight group then cannot turn a small deviation into a
large robust z. The defaults are the project's assumption, stated as one,
not a published figure; ``clusterproof baseline`` measures the site's own
spread and the run writes it on each row it judges (``verdict_spread``),
which replaces the default.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Primary:
    test: str           # the test class (peers.test_of)
    metric: str         # check_perf_var as stored (the device apart)
    spread: float       # assumed healthy relative spread (1 sd / median)
    why: str            # what the metric says of a node


# Assumed healthy spreads (relative standard deviation), by kind of number:
# a compute or memory bandwidth rate of one node is steady run to run; a
# network number depends on the fabric path; a small-message latency on
# the scheduler's timing of a few microseconds.
STEADY = 0.01
FABRIC = 0.02
LATENCY = 0.05
DEFAULT_SPREAD_SOURCE = ('assumed healthy spread (no site baseline: '
                         '`clusterproof baseline` measures it)')

_STREAM = 'the node\'s memory bandwidth (STREAM triad)'
_HPL = 'the node\'s FP64 rate (HPL)'
PRIMARY: tuple[Primary, ...] = (
    Primary('StreamCheck', 'triad_bw', STEADY, _STREAM),
    Primary('StreamSpackCheck', 'triad_bw', STEADY, _STREAM),
    Primary('StreamMpiCheck', 'triad_bw', STEADY, _STREAM),
    Primary('HplCheck', 'gflops', STEADY, _HPL),
    Primary('HplSpackCheck', 'gflops', STEADY, _HPL),
    Primary('HpcgCheck', 'gflops', STEADY, 'HPCG Gflop/s'),
    Primary('HpcgSpackCheck', 'gflops', STEADY, 'HPCG Gflop/s'),
    Primary('HpccNode', 'HPL_Tflops', STEADY, _HPL),
    Primary('HpccNode', 'StarSTREAM_Triad', STEADY, _STREAM),
    Primary('HpccTwoNodes', 'HPL_Tflops', STEADY, _HPL),
    Primary('HpccTwoNodes', 'StarSTREAM_Triad', STEADY, _STREAM),
    # busbw: out-of-place at the largest size (checks/parsers/nccl.py)
    Primary('NcclSingleNode', 'busbw', FABRIC,
            'NCCL bus bandwidth at the largest size'),
    Primary('NcclMultiNode', 'busbw', FABRIC,
            'NCCL bus bandwidth at the largest size'),
    # one size, the health checks' own: its "# Avg bus bandwidth" is what
    # their floor judges
    Primary('NcclHealthCheckAllReduce', 'avg_busbw', FABRIC,
            'NCCL all_reduce bus bandwidth at the health checks\' size'),
    Primary('PerftestPair', 'bw_avg', FABRIC, 'bandwidth of each HCA'),
    Primary('PerftestLoopback', 'bw_avg', FABRIC, 'bandwidth of each HCA'),
    # osu_bw/osu_bibw report their largest size, osu_latency 8 B
    Primary('OsuPointToPoint', 'bandwidth', FABRIC,
            'MPI bandwidth at the largest size'),
    Primary('OsuPointToPoint', 'latency', LATENCY, 'MPI latency at 8 B'),
    Primary('OsuPointToPointSpack', 'bandwidth', FABRIC,
            'MPI bandwidth at the largest size'),
    Primary('OsuPointToPointSpack', 'latency', LATENCY, 'MPI latency at 8 B'),
    Primary('GpuMemoryBandwidth', 'triad_bw', STEADY,
            'each GPU\'s memory bandwidth'),
    Primary('GpuCopyBandwidth', 'h2d_bw', FABRIC,
            'each GPU\'s host-to-device copy bandwidth'),
    Primary('GpuCopyBandwidth', 'd2h_bw', FABRIC,
            'each GPU\'s device-to-host copy bandwidth'),
    Primary('GpuCopyBandwidth', 'p2p_read_bw', FABRIC,
            'each GPU\'s NVLink read bandwidth'),
    Primary('GpuComputeQuick', 'gflops', STEADY, 'each GPU\'s GEMM rate'),
    Primary('GpuComputeBurn', 'gflops', STEADY, 'each GPU\'s GEMM rate'),
    Primary('GpuFabricBandwidth', 'fabric_read_bw', FABRIC,
            'each GPU\'s NVLink fabric bandwidth'),
)
_BY_KEY = {(p.test, p.metric): p for p in PRIMARY}


def primary(test: str, metric: str | None) -> Primary | None:
    """The primary metric *metric* of *test*, or None: recorded only."""
    return _BY_KEY.get((test, metric or ''))


def kql_table() -> str:
    """The table as node_outliers.kql's ``primary_metrics`` datatable (the
    test holds the query's copy to it)."""
    cells = ',\n'.join(f"    '{p.test}', '{p.metric}', {p.spread!r}"
                       for p in PRIMARY)
    return ('let primary_metrics = datatable(test:string, '
            f'check_perf_var:string, default_spread:real)[\n{cells}\n];')
