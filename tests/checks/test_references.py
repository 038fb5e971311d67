"""Reference and peak data: shipped YAML, laid over by a site's files."""
from checks.common import references


def test_peaks_come_from_a_site_file_with_their_source(tmp_path, monkeypatch):
    (tmp_path / 'peaks.yaml').write_text(
        'sources:\n  Spec: "vendor datasheet"\n'
        'HB176rs_v4:\n  stream:\n'
        '    triad_bw: {value: 921600, unit: MB/s, source: Spec,'
        ' derivation: "24 ch x 4800 MT/s x 8 B"}\n')
    monkeypatch.setenv(references.OVERRIDE_ENV, str(tmp_path))
    peaks = references.lookup_peaks('stream', 'Standard_HB176rs_v4')
    assert peaks['triad_bw'].value == 921600.0
    assert peaks['triad_bw'].describe() == \
        '24 ch x 4800 MT/s x 8 B (vendor datasheet)'
    assert references.lookup_peaks('stream', 'Standard_D2s_v5') == {}
    assert references.lookup_peaks('', 'Standard_HB176rs_v4') == {}


def test_a_sku_takes_each_family_from_the_first_entry_that_has_it():
    # HB176rs_v4 has its own CPU peaks; its InfiniBand line rate comes from
    # the family pattern "HB176*_v4" of the shipped file.
    stream = references.lookup_peaks('stream', 'Standard_HB176rs_v4')
    perftest = references.lookup_peaks('perftest', 'Standard_HB176rs_v4')
    assert stream['triad_bw'].value == 921600.0
    assert perftest['bw_avg'].value == 400.0
    assert references.lookup_peaks('perftest', 'Standard_HX176rs')[
        'bw_avg'].value == 400.0
