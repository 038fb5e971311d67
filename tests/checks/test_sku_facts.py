"""SKU hardware facts live in one file, each with its source, and no
product code names a SKU outside it and the reference data."""
import re

from config.systems import sku_facts
from tests.support.helpers import REPO

#: A VM size name: family letters, a core count, then its suffixes
#: (HB176rs_v4, HB120-96rs_v3, HX176rs, ND96isr_H100_v5, NC24ads...).
SKU_NAME = re.compile(r'\b(?:Standard_)?(?:HB|HX|HC|ND|NC|NV)\d+[-\w]*')
ALLOWED = {REPO / 'config' / 'systems' / 'sku_facts.yaml'}
PRODUCT = ('checks', 'config', 'scripts', 'bicep')
SUFFIXES = {'.py', '.sh', '.kql', '.bicep', '.json', '.yaml', '.yml', ''}
URL = re.compile(r'https://\S+')


def product_files():
    for top in PRODUCT:
        for path in (REPO / top).rglob('*'):
            if (path.is_file() and path.suffix in SUFFIXES
                    and '__pycache__' not in path.parts
                    and path not in ALLOWED
                    and path.parent != REPO / 'checks' / 'references'):
                yield path


def test_no_sku_name_outside_the_facts_and_the_reference_data():
    found = []
    for path in product_files():
        for number, line in enumerate(path.read_text(errors='replace')
                                      .splitlines(), 1):
            for match in SKU_NAME.finditer(line):
                found.append(f'{path.relative_to(REPO)}:{number}: '
                             f'{match.group(0)}')
    assert not found, '\n'.join(found)


def test_every_fact_names_a_public_source():
    sources = sku_facts.load()['sources']
    for name, text in sources.items():
        assert URL.search(text), name
        if 'github.com' in text:
            assert re.search(r'\b[0-9a-f]{40}\b', text), name
    for sku in sku_facts.skus():
        for fact, entry in sku_facts.load()[sku].items():
            if fact != 'partition':
                assert entry.get('source') in sources, (sku, fact)


def test_partitions_get_their_extras_from_the_facts():
    from config.systems.azure_skus import SKUS
    assert set(SKUS) == set(sku_facts.by_partition())
    hbv4 = SKUS['hbv4']['extras']
    sku = sku_facts.by_partition()['hbv4']
    assert hbv4['vm_sku'] == sku
    assert hbv4['cores_per_node'] == sku_facts.value(sku, 'cores_per_node')
    assert hbv4['ib_hcas'] == ['mlx5_ib0']
    assert hbv4['hpl_layout']['tasks_per_node'] * \
        hbv4['hpl_layout']['threads_per_task'] == hbv4['cores_per_node']
    assert 'woc-benchmarking' in sku_facts.source(sku, 'hpl_layout')
    # GPUs from the facts; NCCL's environment from its recipes
    from config.systems.azure_skus import sku_partition
    ndv5 = sku_partition('ndv5', scheduler='slurm', launcher='srun',
                         access=[], max_jobs=1)
    assert ndv5['devices'] == [{'type': 'gpu', 'arch': 'sm_90',
                                'num_devices': 8}]
    assert 'nccl_env' in ndv5['extras']


def test_peaks_follow_from_the_facts():
    """peaks.yaml's limits are the facts' arithmetic: memory channels x
    MT/s x 8 B (or Azure's published memory bandwidth), cores x base clock
    x FP64 FLOPs per cycle, the HCA line rate; and every Rpeak in
    peaks.yaml is a size of the facts with that product."""
    from checks.common import references
    from checks.common.references import lookup_peaks
    checked = 0
    for sku in sku_facts.skus():
        fact = lambda name: sku_facts.value(sku, name)  # noqa: E731
        stream = lookup_peaks('stream', sku).get('triad_bw')
        if fact('memory_channels') and fact('memory_mts'):
            assert stream.value == fact('memory_channels') * \
                fact('memory_mts') * 8, sku
            checked += 1
        elif fact('memory_bandwidth_gbs'):
            assert stream.value == fact('memory_bandwidth_gbs') * 1000, sku
            checked += 1
        rpeak = sku_facts.fp64_rpeak_gflops(sku)
        for family, metric, scale in (('hpl', 'gflops', 1),
                                      ('hpcg', 'gflops', 1),
                                      ('hpcc', 'HPL_Tflops', 1000)):
            peak = lookup_peaks(family, sku).get(metric)
            assert (peak and round(peak.value * scale, 1)) == rpeak, \
                (sku, family)
            checked += bool(rpeak)
        line = lookup_peaks('perftest', sku).get('bw_avg')
        if fact('hca_gbps'):
            assert line.value == fact('hca_gbps'), sku
            checked += 1
    assert checked >= 100
    # no Rpeak for a size the facts do not hold, or hold without a clock
    for key, block in references.load_family('peaks').items():
        for family in ('hpl', 'hpcg', 'hpcc'):
            if isinstance(block, dict) and family in block:
                assert sku_facts.fp64_rpeak_gflops(f'Standard_{key}'), key
