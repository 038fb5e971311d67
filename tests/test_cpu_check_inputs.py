"""The pure choices the CPU checks make: STREAM array minimum per SKU, HPL
peak, HPCG input file."""
from checks.cpu import hpcg, hpl, stream


def test_stream_array_minimum_from_published_l3():
    # 4 x 2.3 GB L3 (HBv4/HX), 4 x 1.536 GB (HBv3), in 8-byte elements
    assert stream.minimum_array_elements('Standard_HB176rs_v4') == 1_150_000_000
    assert stream.minimum_array_elements('Standard_HB176-24rs_v4') == 1_150_000_000
    assert stream.minimum_array_elements('Standard_HX176rs') == 1_150_000_000
    assert stream.minimum_array_elements('Standard_HB120rs_v3') == 768_000_000


def test_stream_array_minimum_on_hbv5_is_the_published_run():
    assert stream.minimum_array_elements('Standard_HB368rs_v5') == 327_680_000


def test_stream_mpi_minimum_grows_with_nodes():
    assert stream.minimum_array_elements('Standard_HB120rs_v3', nodes=4) == \
        4 * 768_000_000


def test_no_minimum_where_nothing_is_published():
    assert stream.minimum_array_elements('Standard_HB120rs_v2') is None
    assert stream.minimum_array_elements('') is None


def test_hpl_peak_only_where_published():
    from config.systems.azure_skus import SKUS
    # Azure docs: HBv5 up to 16 TF Rpeak (368 cores), HBv3 4 TF (120 cores)
    assert hpl.peak_gflops_per_node(SKUS['hbv5']['extras']) == 16000
    assert hpl.peak_gflops_per_node(SKUS['hbv3']['extras']) == 4000
    # HBv4's published 7.6 TF is for the 144-core size, not HB176rs_v4
    assert hpl.peak_gflops_per_node(SKUS['hbv4']['extras']) is None


def test_hpcg_dat_text():
    assert hpcg.hpcg_dat(104, 104, 104, 60) == (
        'HPCG benchmark input file\nclusterproof\n104 104 104\n60\n')
