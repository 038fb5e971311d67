"""Every entry of checks/references/*.yaml: a public source, a key with its
check's whole method fingerprint, each fact once; and the STREAM methods of
the health checks, judged only for a binary built their way."""
import re
from pathlib import Path

import pytest
import yaml

from checks.common import references
from checks.common.reference_key import (FINGERPRINTS, KEY_PARTS,
                                         fingerprint_fields, reference_key)
from checks.cpu import stream_method
from checks.parsers import stream as stream_parser
from tests.support.helpers import read_data

FILES = sorted(references.SHIPPED_DIR.glob('*.yaml'))
URL = re.compile(r'https://[\w.-]+\.[a-z]{2,}(/\S*)?')
GITHUB = re.compile(r'https://github\.com/[\w.-]+/[\w.-]+')
COMMIT = re.compile(r'\b[0-9a-f]{40}\b')
ENTRY_FIELDS = {'method', 'unstated', 'nodes', 'fabric', 'env', 'build',
                'source', 'note'}
AZHC_COMMIT = '0e0a1ac26a64b32ac4dd7632a529638505d3314a'


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def entries_of(path: Path):
    """(SKU pattern, label, entry) of a reference file (not peaks.yaml)."""
    for sku, block in load(path).items():
        if sku == 'sources':
            continue
        for label, entry in block.items():
            yield sku, label, entry


# peaks.yaml holds theoretical limits and health.yaml health rules: their
# sources are checked, but they hold no measured references to key.
REFERENCE_FILES = [path for path in FILES
                   if path.stem not in ('peaks', 'health')]


def test_every_reference_family_has_a_fingerprint():
    assert {path.stem for path in REFERENCE_FILES} == set(FINGERPRINTS)


@pytest.mark.parametrize('path', FILES, ids=lambda p: p.name)
def test_every_source_is_a_public_document(path):
    data = load(path)
    sources = data.get('sources') or {}
    text = path.read_text()
    assert '../shared' not in text and '/work/' not in text
    for name, source in sources.items():
        assert URL.search(source), f'{path.name}: {name} names no URL'
        for repo in GITHUB.finditer(source):
            assert COMMIT.search(source), \
                f'{path.name}: {name} cites {repo.group(0)} without a commit'
    # every figure names one of them
    for sku, block in data.items():
        # (health.yaml's lists of XIDs and benign clock events are rule data)
        if sku == 'sources' or not isinstance(block, dict):
            continue
        for label, entry in block.items():
            if not isinstance(entry, dict):
                continue
            for spec in entry.values():
                if references.is_metric(spec):
                    assert spec.get('source') in sources, (sku, label)
            if isinstance(entry.get('source'), str):
                assert entry['source'] in sources, (sku, label)


@pytest.mark.parametrize('path', REFERENCE_FILES, ids=lambda p: p.name)
def test_every_key_holds_its_checks_whole_fingerprint(path):
    fields = set(fingerprint_fields(path.stem))
    for sku, label, entry in entries_of(path):
        where = f'{path.name}: {sku}/{label}'
        others = set(entry) - ENTRY_FIELDS
        assert all(references.is_metric(entry[name]) for name in others), \
            f'{where}: unknown fields {sorted(others)}'
        method = entry.get('method') or {}
        unstated = set(entry.get('unstated') or ())
        assert unstated <= fields | set(KEY_PARTS), where
        assert set(method) <= fields, \
            f'{where}: not fingerprint fields: {sorted(set(method) - fields)}'
        missing = fields - set(method) - unstated
        assert not missing, f'{where}: key lacks {sorted(missing)}'
        assert isinstance(entry.get('nodes', 1), int), where


def _facts():
    """(family, SKU pattern, label, metric, key, value, unit, document)."""
    for path in REFERENCE_FILES:
        sources = load(path).get('sources') or {}
        for sku, label, entry in entries_of(path):
            for metric, spec in entry.items():
                if not references.is_metric(spec):
                    continue
                key = reference_key(metric, sku, entry.get('method'),
                                    entry.get('nodes', 1),
                                    entry.get('fabric'))
                document = URL.search(sources[spec['source']]).group(0)
                yield (path.stem, sku, label, metric, key,
                       float(spec['value']), spec['unit'], document)


def test_no_fact_is_stored_twice():
    keys, figures = {}, {}
    for family, sku, label, metric, key, value, unit, doc in _facts():
        # one reference per key and family
        assert (family, key) not in keys, \
            f'{family}: {key} in {keys[(family, key)]} and {label}'
        keys[(family, key)] = label
        # one figure of one document for one SKU lives in one family
        figure = (sku, value, unit, doc)
        assert figures.setdefault(figure, family) == family, \
            f'{figure} is in {family}.yaml and {figures[figure]}.yaml'


def test_the_hbv5_latency_has_one_home():
    homes = [(family, metric) for family, sku, _, metric, _, value, unit, _
             in _facts() if value == 1.25 and unit == 'us']
    assert homes == [('perftest', 'lat_min')]


# -- STREAM: the health checks' methods, commit 0e0a1ac ----------------------

STREAM = load(references.SHIPPED_DIR / 'stream.yaml')


def test_stream_methods_are_the_health_checks_at_0e0a1ac():
    assert AZHC_COMMIT in STREAM['sources']['AzHC-method']
    for sku in ('HB176rs_v4', 'HX176rs', 'HB176-24rs_v4', 'HB120rs_v3',
                'HB120-16rs_v3', 'HB120rs_v2'):
        entry = STREAM[sku]['azhc']
        assert entry['source'] == 'AzHC-method'
        assert entry['method']['array_size'] == 400_000_000
        assert entry['method']['ntimes'] == 20
        assert '-DNTIMES=20' in entry['build']
        assert '-DSTREAM_ARRAY_SIZE=400000000' in entry['build']
    assert STREAM['HB176rs_v4']['azhc']['method']['threads'] == 48
    assert STREAM['HB176-96rs_v4']['azhc']['method']['threads'] == 24
    assert STREAM['HB120rs_v3']['azhc']['method']['threads'] == 32
    assert STREAM['HB120-64rs_v3']['azhc']['method']['threads'] == 16
    assert 'znver4' in STREAM['HB176rs_v4']['azhc']['build']
    assert 'znver3' in STREAM['HB120rs_v3']['azhc']['build']
    assert 'znver2' in STREAM['HB120rs_v2']['azhc']['build']


def test_stream_place_labels_are_those_of_their_place_lists():
    for sku, label, entry in entries_of(references.SHIPPED_DIR /
                                        'stream.yaml'):
        places = (entry.get('env') or {}).get('OMP_PLACES')
        if places:
            assert entry['method']['places'] == \
                stream_method.places_label(places), (sku, label)
            if '{' in places:
                assert places.count('{') == entry['method']['threads']


def standin_output(array_size: int, ntimes: int, threads: int) -> str:
    """A stand-in binary's output: a real STREAM output (tests/support/data) with
    the build's array size and NTIMES and the run's thread count put in."""
    text = read_data('stream', 'stream_c_omp2_20M.out')
    text = text.replace('Array size = 20000000', f'Array size = {array_size}')
    text = text.replace('executed 10 times', f'executed {ntimes} times')
    return re.sub(r'(Number of Threads (?:requested|counted) = )2',
                  rf'\g<1>{threads}', text)


def judged(vm_sku: str, array_size: int, ntimes: int):
    entry = STREAM[references.short_sku(vm_sku)]['azhc']
    env = {'OMP_NUM_THREADS': str(entry['method']['threads']),
           **entry['env']}
    result = stream_parser.parse(standin_output(
        array_size, ntimes, entry['method']['threads']))
    assert result.ok, result.reason
    method = stream_method.run_fingerprint(result.details, env)
    return references.find('stream', 'triad_bw', vm_sku, method)


@pytest.mark.parametrize('vm_sku', ['Standard_HB176rs_v4',
                                    'Standard_HB120rs_v3',
                                    'Standard_HB120-32rs_v3'])
def test_a_binary_built_the_health_checks_way_is_judged(vm_sku):
    match = judged(vm_sku, 400_000_000, 20)
    assert match.same_method
    assert match.reference.lower == 0.0


def test_a_binary_built_otherwise_is_informational():
    match = judged('Standard_HB176rs_v4', 800_000_000, 10)
    assert not match.same_method
    assert match.differences == ('array_size 800000000 (reference: '
                                 '400000000)', 'ntimes 10 (reference: 20)')
    # the project's own method on HBv3: every core, OMP_PLACES=cores
    result = stream_parser.parse(standin_output(400_000_000, 20, 120))
    method = stream_method.run_fingerprint(
        result.details, {'OMP_PLACES': 'cores'})
    match = references.find('stream', 'triad_bw', 'Standard_HB120rs_v3',
                            method)
    assert match.differences == ('threads 120 (reference: 32)',
                                 'places cores (reference: list32-'
                                 + STREAM['HB120rs_v3']['azhc']['method'][
                                     'places'].split('-')[1] + ')')
