"""BabelStream parser against real outputs (tests/support/data/babelstream, see its
PROVENANCE.md); expected values read by eye from the line named beside
them, MBytes/sec / 1000 = GB/s."""
import pytest

from checks import parsers
from checks.parsers import babelstream

from tests.support.helpers import REPO

FILES = REPO / 'tests' / 'support' / 'data' / 'babelstream'
POLARIS = 'babelstream-5.0-cuda-A100-SXM4-40GB-Polaris-build-and-run-session.out'


def read(name):
    return (FILES / name).read_text()


# file -> (copy_bw, triad_bw, dot_bw or None, device), GB/s
GOOD = {
    # lines 131 and 134-135, after ~110 lines of shell and CMake output
    POLARIS: (1400.256415, 1377.517491, 1353.461767, 'NVIDIA A100-SXM4-40GB'),
    # lines 11, 14, 15
    'babelstream-3.3-cuda-TITAN-Xp-official-results.out':
        (433.182244, 436.491299, 435.969304, 'TITAN Xp'),
    # lines 11 and 14; GPU-STREAM 2.0 has no Dot row
    'gpu-stream-2.0-cuda-K80-official-results.out':
        (179.85107, 176.116986, None, 'Tesla K80'),
}


@pytest.mark.parametrize('name', sorted(GOOD))
def test_corpus_values(name):
    copy, triad, dot, device = GOOD[name]
    result = babelstream.parse(read(name))
    assert result.ok, result.reason
    assert result.value('copy_bw') == pytest.approx(copy)
    assert result.value('triad_bw') == pytest.approx(triad)
    assert result.metrics['triad_bw'].unit == 'GB/s'
    if dot is None:
        assert 'dot_bw' not in result.metrics
    else:
        assert result.value('dot_bw') == pytest.approx(dot)
    assert result.details['device'] == device


def test_a_failed_validation_fails_the_run_and_keeps_the_rates():
    text = read(POLARIS) + 'Validation failed on c[]. Average error 3.5\n'
    result = babelstream.parse(text)
    assert not result.ok
    assert result.reason == ('babelstream validation failed: Validation '
                             'failed on c[]. Average error 3.5')
    assert result.value('triad_bw') == pytest.approx(1377.517491)


def test_a_table_cut_short_names_the_missing_kernels():
    lines = read(POLARIS).splitlines()
    cut = '\n'.join(lines[:lines.index(next(l for l in lines
                                            if l.startswith('Add')))])
    result = babelstream.parse(cut)
    assert not result.ok
    assert result.reason == ('babelstream table has no row for Add, Triad '
                             '(output cut short)')


def test_no_table_at_all():
    text = 'BabelStream\nVersion: 5.0\nImplementation: CUDA\n'
    result = babelstream.parse(text)
    assert not result.ok and 'no results table' in result.reason


def test_mibibytes_are_converted():
    text = read('babelstream-3.3-cuda-TITAN-Xp-official-results.out') \
        .replace('MBytes/sec', 'MiBytes/sec')
    # line 14: 436491.299 MiB/s = 457.69... GB/s
    assert babelstream.parse(text).value('triad_bw') == pytest.approx(
        436491.299 * 2 ** 20 / 1e9, rel=1e-6)


def test_foreign_text():
    result = parsers.parse('babelstream', 'STREAM version $Revision: 5.10 $')
    assert result.reason.startswith('not babelstream output')
