"""Issue 35's reference audit: each figure applies where its source says,
in the unit the source uses, measured the way the source measured it.
Every test here failed on the data before the fix it guards."""
from checks.common import references

GDR = {'test': 'ib_write_bw', 'size': '8M', 'bidir': False, 'gdr': True,
       'layout': 'loopback', 'qps': 1, 'duration': 0, 'all_hcas': True}
HOST = {'test': 'ib_write_bw', 'size': '1M', 'bidir': False, 'gdr': False,
        'layout': 'loopback', 'qps': 2, 'duration': 10, 'all_hcas': False}


def test_mi200_gets_its_host_memory_floor_and_no_gpu_direct_one():
    # conf/nd96asr_mi200_v4.conf (azurehpc-health-checks 0e0a1ac) has
    # 'check_ib_bw_non_gdr 175.0' and no check_ib_bw_gdr; the pattern
    # ND96a*sr*_v4 gave it the A100 sizes' GDR floor of 180.
    mi200 = 'Standard_ND96asr_mi200_v4'
    assert references.find('perftest', 'bw_avg', mi200, GDR) is None
    host = references.find('perftest', 'bw_avg', mi200, HOST)
    assert host.same_method and host.reference.value == 175.0
    assert 'nd96asr_mi200_v4.conf' in host.reference.source
    for a100 in ('Standard_ND96asr_v4', 'Standard_ND96amsr_A100_v4'):
        gdr = references.find('perftest', 'bw_avg', a100, GDR)
        assert gdr.same_method and gdr.reference.value == 180.0, a100
