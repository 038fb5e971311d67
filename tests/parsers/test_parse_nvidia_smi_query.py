"""The samples taken during a GPU load (checks/parsers/nvidia_smi_query.py).
No public output of this exact --query-gpu line was found: the lines below
are written in the CSV layout `nvidia-smi --format=csv,noheader,nounits`
documents (one line per GPU, fields in the order asked), and marked so."""
from checks.parsers import nvidia_smi_query

# constructed: two samples of two GPUs, the second GPU power-capped and
# thermally slowed in its second sample, one field N/A
SAMPLES = '''\
0, 00000000:18:00.0, 1654922009876, 1980, 45, 690.12, 0x0000000000000000
1, 00000000:2A:00.0, 1654922001234, 1980, 47, 688.40, 0x0000000000000000
0, 00000000:18:00.0, 1654922009876, 1965, 61, 699.80, 0x0000000000000000
1, 00000000:2A:00.0, 1654922001234, 1410, 83, [N/A], 0x0000000000000044
'''


def test_each_gpu_keeps_its_worst_sample_and_every_slowdown():
    gpus = nvidia_smi_query.parse(SAMPLES)
    assert sorted(gpus) == [0, 1]
    zero, one = gpus[0], gpus[1]
    assert (zero.samples, zero.sm_clock_min, zero.temp_max,
            zero.power_max) == (2, 1965.0, 61.0, 699.8)
    assert zero.slowdowns() == []
    assert (one.sm_clock_min, one.temp_max, one.power_max) == \
        (1410.0, 83.0, 688.4)
    assert one.slowdowns() == ['hw_thermal_slowdown', 'sw_power_cap']
    assert one.identity() == {'index': 1, 'bus_id': '00000000:2A:00.0',
                              'serial': '1654922001234'}


def test_reason_bits_are_nvmls():
    # nvml.h: GpuIdle 0x1, SwPowerCap 0x4, HwSlowdown 0x8,
    # HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80
    assert nvidia_smi_query.reasons('0x00000000000000CD') == [
        'gpu_idle', 'sw_power_cap', 'hw_slowdown', 'hw_thermal_slowdown',
        'hw_power_brake_slowdown']
    assert nvidia_smi_query.reasons('[N/A]') == []


def test_no_driver_gives_no_sample():
    text = ("NVIDIA-SMI has failed because it couldn't communicate with the "
            'NVIDIA driver. Make sure that the latest NVIDIA driver is '
            'installed and running.\n')
    assert nvidia_smi_query.parse(text) == {}
