"""OMB with GPU buffers: the output must show the buffers were on the GPU
(real outputs in tests/support/data/osu, see PROVENANCE there)."""
import pytest

from checks.parsers import osu

from tests.support.helpers import DATA

OSU = DATA / 'osu'


@pytest.mark.parametrize('name', [
    'osu_bw_v7.5_cuda-DD_a100-oci-2node-256MiB.out',
    'osu_latency_v7.5_cuda-DD_a100-oci-intranode.out',
    'osu_xccl_allreduce_v7.5_cuda-DD_a100-oci-2node-16gpu.out',
])
def test_cuda_runs_prove_their_buffers(name):
    result = osu.parse((OSU / name).read_text())
    assert result.ok and result.details['device'] == 'cuda'
    assert osu.buffer_problem(result.details, 'cuda') is None


def test_host_run_does_not_pass_for_gpu_buffers():
    result = osu.parse((OSU / 'osu_bw_v7.5_oci-x9-2node-256MiB.out')
                       .read_text())
    assert result.ok
    assert osu.buffer_problem(result.details, 'cpu') is None
    assert osu.buffer_problem(result.details, 'cuda') == (
        'GPU buffers were asked for (-d cuda), but OMB ran with host '
        'buffers (no "MPI-CUDA" title, no "Buffer on DEVICE" line)')
