"""IB line rate per HCA and GPU hardware limits in checks/references/peaks.yaml."""
import pytest
import yaml

from checks.common import references


class _UniqueKeys(yaml.SafeLoader):
    """A loader that refuses a key given twice in one mapping: PyYAML keeps
    the last one silently, which would hide one SKU's peaks behind another
    (e.g. two branches both adding the same SKU)."""


def _unique_mapping(loader, node, deep=False):
    keys = [loader.construct_object(key, deep=deep) for key, _ in node.value]
    duplicated = {key for key in keys if keys.count(key) > 1}
    if duplicated:
        raise yaml.constructor.ConstructorError(
            None, None, f'duplicate keys {sorted(duplicated)}', node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeys.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: dict(_unique_mapping(loader, node, deep=True)))


@pytest.mark.parametrize('family', ['peaks', 'nccl', 'perftest', 'osu'])
def test_no_key_given_twice(family):
    with open(references.SHIPPED_DIR / f'{family}.yaml') as fp:
        assert yaml.load(fp, Loader=_UniqueKeys)


@pytest.mark.parametrize('sku, line_rate', [
    ('Standard_ND96isr_H100_v5', 400.0),
    ('Standard_ND96isr_H200_v5', 400.0),
    ('Standard_ND96isrf_H200_v5', 400.0),
    ('Standard_ND96amsr_A100_v4', 200.0),
    ('Standard_ND96asr_v4', 200.0),
    ('Standard_HB176rs_v4', 400.0),
    ('Standard_HX176rs', 400.0),
    ('Standard_HB368rs_v5', 200.0),
    ('Standard_HB120rs_v3', 200.0),
    ('Standard_HB120rs_v2', 200.0),
    ('Standard_HC44rs', 100.0),
    # nd-gb200-v6-series-summary.md: "4x 400 Gb/s ... InfiniBand"
    ('Standard_ND128isr_NDR_GB200_v6', 400.0),
    # ai-infrastructure-on-azure SKILL.md: "4 x 400 Gb/s IB ports"
    ('Standard_ND128isr_GB300_v6', 400.0),
])
def test_ib_line_rate_per_hca(sku, line_rate):
    peaks = references.lookup_peaks('perftest', sku)
    assert set(peaks) == {'bw_avg', 'bw_peak'}
    for peak in peaks.values():
        assert (peak.value, peak.unit) == (line_rate, 'Gb/s')
        assert peak.source and peak.derivation


def test_no_ib_peak_without_infiniband():
    # ND96is_H200_v5 has no "r": no InfiniBand
    assert references.lookup_peaks('perftest', 'Standard_ND96is_H200_v5') \
        == {}


@pytest.mark.parametrize('sku, hbm, nvlink', [
    ('Standard_ND96isr_H100_v5', 3350.0, 450.0),
    ('Standard_ND96isr_H200_v5', 4800.0, 450.0),
    ('Standard_ND96is_H200_v5', 4800.0, 450.0),
    ('Standard_ND96amsr_A100_v4', 2039.0, 300.0),
    ('Standard_ND96asr_v4', 1555.0, 300.0),
    ('Standard_ND128isr_NDR_GB200_v6', 8000.0, 900.0),
    ('Standard_ND128isr_GB300_v6', 8000.0, 900.0),
])
def test_gpu_hbm_and_nvlink_per_gpu(sku, hbm, nvlink):
    peaks = references.lookup_peaks('gpu', sku)
    assert (peaks['hbm_bw'].value, peaks['hbm_bw'].unit) == (hbm, 'GB/s')
    assert (peaks['nvlink_bw'].value, peaks['nvlink_bw'].unit) == \
        (nvlink, 'GB/s')
    assert 'datasheet' in peaks['hbm_bw'].source or \
        'specifications' in peaks['hbm_bw'].source


def test_nccl_busbw_has_no_peak():
    # NVLS reduces inside the switch: bus bandwidth can pass the NVLink rate
    assert references.lookup_peaks('nccl', 'Standard_ND96isr_H100_v5') == {}
