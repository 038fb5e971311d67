"""gpu_burn parser against real outputs (tests/support/data/gemm-burn, see its
PROVENANCE.md): gpu_burn exits 0 for a faulty GPU, so the text decides.
Expected values read by eye from the line named beside them."""
import pytest

from checks import parsers
from checks.parsers import gpu_burn

from tests.support.helpers import REPO

FILES = REPO / 'tests' / 'support' / 'data' / 'gemm-burn'
A100 = 'gpu_burn-A100x8-pass-superbench.out'


def read(name):
    return (FILES / name).read_text()


@pytest.mark.parametrize('name', [
    'cublaslt_gemm-ncu-B200-superbench.out',
    'cutlass_profiler-gemm-fp16-tensorop-A100-incorrect-superbench-excerpt.out',
    'cutlass_profiler-gemm-tf32-tensorop-A100-passed-superbench-excerpt.out',
    'dcgmproftester12-t1007-dcgm3.1.3-CC8.6-48SM-gflops.out'])
def test_other_gemm_tools_outputs_are_foreign(name):
    # the rest of the shared corpus's gemm-burn folder: no check runs these
    # tools, and their GFLOP/s must never pass for gpu_burn's
    result = parsers.parse('gpu-burn', read(name))
    assert not result.ok
    assert result.reason.startswith('not gpu-burn output')


def test_eight_gpus_pass_with_the_last_progress_record():
    result = gpu_burn.parse(read(A100))
    assert result.ok, result.reason
    # line 21, the last record (after its last carriage return): GPU 0
    # 16942 Gflop/s, GPU 1 17093, GPU 7 16926; temps 62 C ... 61 C
    assert result.value('gflops_gpu0') == 16942
    assert result.value('gflops_gpu1') == 17093
    assert result.value('gflops_gpu7') == 16926
    assert result.metrics['gflops_gpu0'].unit == 'Gflop/s'
    assert result.value('temp_gpu7') == 61
    assert {result.value(f'errors_gpu{i}') for i in range(8)} == {0}
    # lines 56-64: Tested 8 GPUs, every one OK
    assert set(result.details['verdicts'].values()) == {'OK'}
    assert result.details['mode'] == 'doubles+tensor_cores'
    # early records (line 9) show only GPU 0 working: the last one counts
    assert result.details['progress_records'] > 100


def test_faulty_gpus_with_negative_error_counts_fail_by_name():
    result = gpu_burn.parse(read('gpu_burn-16GPU-all-FAULTY-negative-error-'
                                 'counts-issue12-excerpt.out'))
    assert not result.ok
    assert result.reason.startswith('gpu_burn calls GPU 0, 1, 2, 3, 4, 5, '
                                    '6, 7, 8, 9, 10, 11, 12, 13, 14, 15 '
                                    'FAULTY')
    # line 1: GPU 1 counted -524288000 errors, GPU 0 none
    assert 'GPU 1: -524288000 compute errors' in result.reason
    assert 'GPU 0:' not in result.reason.split('FAULTY', 1)[1]
    assert result.value('errors_gpu1') == -524288000
    assert result.value('gflops_gpu10') == 6660   # line 1, eleventh rate


def test_ok_without_a_progress_record_is_not_a_measurement():
    result = gpu_burn.parse(read('gpu_burn-RTX-A2000-Embedded-no-progress-'
                                 'lines-but-OK-issue124.out'))
    assert not result.ok
    assert result.reason.startswith('no progress record')
    assert result.details["verdicts"] == {"0": "OK"}   # line 14


def test_a_run_without_its_summary_was_cut_short():
    result = gpu_burn.parse(read('gpu_burn-RTX-A500-Embedded-10s-no-final-'
                                 'summary-issue124.out'))
    assert not result.ok
    assert result.reason == ("no 'Tested N GPUs:' summary: the run was cut "
                             'short')
    assert result.value('gflops_gpu0') == 3519   # line 13, the last record


def test_single_gpu_blog_run():
    result = gpu_burn.parse(read('gpu_burn-RTX-A400-OK-blog.out'))
    assert result.ok, result.reason
    # line 34: 100.0%  proc'd: 814 (1772 Gflop/s)   errors: 0   temps: 74 C
    assert (result.value('gflops_gpu0'), result.value('temp_gpu0')) == \
        (1772, 74)
    assert result.details['seconds'] == 500


def test_a_gpu_idle_while_its_siblings_ran_fails():
    # the real A100 run with GPU 3's last rate turned to nothing
    text = read(A100)
    last = text.rindex("proc'd:")
    tail = text[last:].replace('4522 (16926 Gflop/s)', '0 (0 Gflop/s)', 1)
    result = gpu_burn.parse(text[:last] + tail)
    assert not result.ok
    assert result.reason == 'GPU 3 did no work while 0, 1, 2, 4, 5, 6, 7 ran'


def test_a_nonzero_error_count_fails_even_when_gpu_burn_says_ok():
    text = read('gpu_burn-RTX-A400-OK-blog.out').replace(
        'errors: 0   temps: 74 C\nKilling', 'errors: 12  (WARNING!)   '
        'temps: 74 C\nKilling')
    result = gpu_burn.parse(text)
    assert not result.ok
    assert result.reason == 'GPU 0: 12 compute errors'


def test_foreign_text():
    result = parsers.parse('gpu-burn', 'Tested nothing')
    assert result.reason.startswith('not gpu-burn output')
