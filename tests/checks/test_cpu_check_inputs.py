"""The pure choices the CPU checks make: STREAM array minimum per SKU, the
peaks and references they are compared with, HPL block size, HPCG input."""
import pytest

from checks.cpu import hpcg, hpl, stream


def _extras(partition):
    from config.systems.azure_skus import SKUS
    return SKUS[partition]['extras']


def test_stream_array_minimum_from_published_l3():
    # 4 x the L3 in 8-byte elements: 24 x 96 MiB (HBv4/HX), 16 x 96 MiB
    # (HBv3), 48 x 32 MiB (HBv5 and its constrained sizes)
    for partition, elements in (('hbv4', 1_207_959_552),
                                ('hx', 1_207_959_552),
                                ('hbv3', 805_306_368),
                                ('hbv5', 805_306_368),
                                ('hbv5_48', 805_306_368)):
        assert stream.minimum_array_elements(
            _extras(partition)['l3_bytes']) == elements


def test_stream_array_minimum_without_l3_is_the_published_run():
    # where no L3 size is published: the reference run's array size
    assert stream.minimum_array_elements(None, 1, 327_680_000) == 327_680_000


def test_stream_mpi_minimum_grows_with_nodes():
    assert stream.minimum_array_elements(1.536e9, nodes=4) == \
        4 * 768_000_000


def test_no_minimum_where_nothing_is_published():
    assert stream.minimum_array_elements(None) is None


def test_rpeak_only_from_published_facts():
    from checks.common.references import lookup_peaks
    # HBv5: 368 cores x 3.5 GHz base x 16 FP64 FLOPs/cycle (Zen 4)
    peak = lookup_peaks('hpl', 'Standard_HB368rs_v5')['gflops']
    assert peak.value == 368 * 3.5 * 16
    assert 'hbv5-series.md' in peak.source and '3.5 GHz' in peak.derivation
    # HBv4: 176 cores x 2.4 GHz base (Azure's size table) x 16; each
    # constrained size with its own cores
    assert lookup_peaks('hpl', 'Standard_HB176rs_v4')['gflops'].value == \
        pytest.approx(176 * 2.4 * 16)
    assert lookup_peaks('hpl', 'Standard_HB176-24rs_v4')['gflops'].value \
        == pytest.approx(24 * 2.4 * 16)
    # HBv3: 1.9 GHz base (Zen 3, 16 FLOPs/cycle); HX: 2.4 GHz base
    assert lookup_peaks('hpl', 'Standard_HB120rs_v3')['gflops'].value == \
        pytest.approx(120 * 1.9 * 16)
    assert lookup_peaks('hpl', 'Standard_HX176rs')['gflops'].value == \
        pytest.approx(176 * 2.4 * 16)
    # constrained-core HBv5 sizes: their own cores, not the 368-core peak
    assert lookup_peaks('hpl', 'Standard_HB368-336rs_v5')['gflops'].value \
        == pytest.approx(336 * 3.5 * 16)


def test_azure_hpl_figures_are_references_without_verdict():
    from checks.common.references import find
    # 16 TF is below HBv5's 20.6 TF Rpeak: a published figure, not a limit,
    # and its method is not published: shown, never judged
    match = find('hpl', 'gflops', 'Standard_HB368rs_v5',
                 {'ranks_per_node': 368, 'threads_per_rank': 1, 'nb': 384})
    assert match.reference.value == 16000 and not match.same_method
    assert match.unstated == ('ranks_per_node', 'threads_per_rank', 'nb')
    from config.systems.azure_skus import SKUS
    assert all('peak_gflops_per_node' not in sku['extras']
               for sku in SKUS.values())


def test_memory_bandwidth_peaks_are_channels_times_rate():
    from checks.common.references import lookup_peaks
    hbv4 = lookup_peaks('stream', 'Standard_HB176rs_v4')
    # 4 NUMA x 6 channels x 4800 MT/s x 8 B, in MB/s like STREAM
    assert {name: p.value for name, p in hbv4.items()} == {
        name: 4 * 6 * 4800 * 8 for name in
        ('copy_bw', 'scale_bw', 'add_bw', 'triad_bw')}
    assert lookup_peaks('stream', 'Standard_HX176-96rs')['triad_bw'].value \
        == 921600
    # 4 NUMA x 4 channels x 3200 MT/s x 8 B
    assert lookup_peaks('stream', 'Standard_HB120rs_v3')['triad_bw'].value \
        == 409600
    # HBv5's HBM: Azure's published 6.7 TB/s (no channel count published)
    assert lookup_peaks('stream', 'Standard_HB368rs_v5')['triad_bw'].value \
        == 6_700_000


def test_hpl_block_size_by_blas_family():
    from checks.cpu import hpl_input
    assert hpl_input.block_size_for('MKL') == 384
    assert hpl_input.block_size_for('aocl') == 384
    assert hpl_input.block_size_for('openblas') == 256
    assert hpl_input.block_size_for('') == hpl_input.DEFAULT_NB


def test_hpcg_dat_text():
    assert hpcg.hpcg_dat(104, 104, 104, 60) == (
        'HPCG benchmark input file\nclusterproof\n104 104 104\n60\n')
