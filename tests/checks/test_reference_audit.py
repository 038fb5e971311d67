"""Issue 35's reference audit: each figure applies where its source says,
in the unit the source uses, measured the way the source measured it.
Every test here failed on the data before the fix it guards."""
import json
import re

from checks.common import references
from checks.common.sku_references import KEYS_FILE
from checks.cpu.stream import minimum_array_elements
from config.systems import discovery, sku_facts
from config.systems.azure_skus import SKUS
from tests.support.helpers import REPO, run_reframe, suite_env

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


def test_a_constrained_hbv5_size_runs_stream_on_its_own_cores(tmp_path):
    # HBv5's STREAM method (368 threads, OMP_PLACES=cores) is the full
    # size's alone; HB368-96rs_v5 has 96 cores (hbv5-series.md sizes
    # table) and runs the project's own method, with no published verdict.
    prefix = tmp_path / 'rfm'
    result = run_reframe('--system', 'azure:hbv5_96', '-c', 'checks', '-n',
                         '^StreamCheck$', '--dry-run', '--prefix',
                         str(prefix), env=suite_env(tmp_path / 'home'),
                         cwd=str(REPO), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    scripts = list(prefix.rglob('rfm_job.sh'))
    assert len(scripts) == 1, result.stdout      # not skipped
    script = scripts[0].read_text()
    assert '#SBATCH --cpus-per-task=96' in script
    assert 'export OMP_NUM_THREADS=96' in script
    assert 'export OMP_PLACES=cores' in script
    keys = json.loads(next(prefix.rglob(KEYS_FILE)).read_text())
    assert {metric['reference'] for metric in keys['metrics'].values()} \
        == {None}


def test_discovery_proposes_a_constrained_hbv5_size_by_its_shape():
    # 96 CPUs, no GPU, CCWS's RealMemory of 432 GiB less its 5 % dampening
    line = 'hpc5|ccw-hpc5-1|96|420249|(null)|cloud|idle~\n'
    proposal = discovery.propose(discovery.parse_sinfo(line)[0])
    assert proposal.candidates == ['hbv5_96']
    assert SKUS['hbv5_96']['extras']['vm_sku'] == 'Standard_HB368-96rs_v5'


def test_l3_sizes_are_binary_and_hold_stream_arrays_of_four_times_them():
    # hbv3/hbv4-series-overview.md: 16 and 24 L3s of 96 MB; HBv5: 48 of
    # 32 MB. AMD's MB of cache is 2^20 bytes; the 1.536 GB and 2.3 GB of
    # the size pages were read as 10^9 bytes, 5 % too small.
    mib = 2 ** 20
    expected = {'Standard_HB120rs_v3': 16 * 96 * mib,
                'Standard_HB176rs_v4': 24 * 96 * mib,
                'Standard_HX176rs': 24 * 96 * mib,
                'Standard_HB368rs_v5': 48 * 32 * mib}
    for sku, size in expected.items():
        assert sku_facts.value(sku, 'l3_bytes') == size, sku
    # STREAM's rule: each array at least 4x the L3, in 8-byte words
    assert minimum_array_elements(
        sku_facts.value('Standard_HB176rs_v4', 'l3_bytes')) == 1207959552


def test_hbv5_facts_rest_on_azures_size_page():
    # hbv5-series.md: 3.5 GHz base, 432 GB, 6.7 TB/s, 1.5 GB of L3
    for sku in sku_facts.skus():
        if sku.startswith('Standard_HB368'):
            for fact in sku_facts.load()[sku]:
                # the microarchitecture's FLOPs per cycle are not Azure's
                if fact not in ('partition', 'fp64_flops_per_cycle'):
                    source = sku_facts.source(sku, fact)
                    assert 'hbv5-series' in source, (sku, fact)
    assert sku_facts.value('Standard_HB368rs_v5', 'base_clock_ghz') == 3.5
    assert sku_facts.value('Standard_HB368rs_v5', 'memory_gib') == 432
    # the other Azure page's 450 GB is recorded beside it
    assert "'Memory 450 GB'" in sku_facts.load()['sources']['HBv5specs']
    # the base-clock Rpeak is the peak; Azure's "up to 16 TF" is shown
    # beside a result, never judging it
    assert references.lookup_peaks('hpl', 'Standard_HB368rs_v5')[
        'gflops'].value == 20608
    shown = references.find('hpl', 'gflops', 'Standard_HB368rs_v5',
                            {'ranks_per_node': 368, 'threads_per_rank': 1,
                             'nb': 256})
    assert shown.reference.value == 16000 and not shown.same_method
    assert 'hbv5-performance.md' in shown.reference.source


def test_each_memory_size_is_what_its_source_says():
    # HBv4's 768 cited the health-check conf, which gives MemTotal
    # (755.8 GiB); the A100/H100 1900 and HX 1408 likewise
    for sku in sku_facts.skus():
        memory = sku_facts.load()[sku].get('memory_gib')
        if memory:
            source = sku_facts.load()['sources'][memory['source']]
            quoted = re.compile(rf"'Memory[^']*\b{memory['value']}\b[^']*'")
            assert quoted.search(source), (sku, source)


def test_the_blas_named_is_the_one_the_recipe_builds():
    # Azure/woc-benchmarking d5fdeda hpl_build_script.sh builds upstream
    # BLIS with gcc, for HBv2-HBv4 only
    for sku in sku_facts.skus():
        blas = sku_facts.load()[sku].get('blas_family')
        if blas:
            assert blas['value'] == 'blis', sku
            assert sku_facts.value(sku, 'hpl_layout'), sku
    assert sku_facts.value('Standard_HB368rs_v5', 'blas_family') is None
    assert sku_facts.value('Standard_HX176rs', 'blas_family') is None


def test_rpeak_of_hbv3_and_hx_from_their_clocks():
    # hbv3-series.md: base 1.9 GHz (Zen 3); hx-series.md: base 2.4 GHz
    for sku, gflops in (('HB120rs_v3', 3648.0), ('HB120-16rs_v3', 486.4),
                        ('HX176rs', 6758.4), ('HX176-24rs', 921.6)):
        assert references.lookup_peaks('hpl', sku)['gflops'].value == \
            gflops, sku
        assert references.lookup_peaks('hpcc', sku)['HPL_Tflops'].value \
            == gflops / 1000, sku


def test_the_guides_babelstream_figure_is_never_a_stream_reference():
    # ND_GB200_v6_results.md "CPU STREAM": Copy, Mul, Add, Triad, Dot are
    # BabelStream's kernels; STREAM has Scale, not Mul, and no Dot
    any_method = {'array_size': 10 ** 8, 'ntimes': 10, 'threads': 72,
                  'places': 'cores', 'ranks': 1}
    for metric in ('copy_bw', 'add_bw', 'triad_bw'):
        assert references.find('stream', metric,
                               'Standard_ND128isr_NDR_GB200_v6',
                               any_method) is None
