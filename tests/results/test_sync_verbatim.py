"""`sync`'s fast path (config/results/store/verbatim.py): a line in the store
writer's own form is shipped without being decoded; every other line goes
through the store's reader exactly as before: torn and foreign lines skipped
with a warning, NaN and infinities sent as null, wrong types nulled, numeric
record_ids made strings, a missing completion time filled in. Checked line
by line against store.parse_line, by random damage to written lines, and
end to end with the real azure-monitor-ingestion client against the
loopback API."""
import json
import random

import pytest

from config.results.azure import ledger
from config.results.rows import schema as row_schema
from config.results.store import files as store, verbatim
from tests.support.reporting_helpers import (run_sync, session_env,
                                             store_session)

STAMP = '2026-11-30T01:00:00+00:00'


def row(record_id, **more):
    return row_schema.make_row({
        'record_id': record_id, 'TimeGenerated': STAMP,
        'check_job_completion_time': STAMP, 'check_name': 'T',
        'check_perf_var': 'm', 'check_perf_value': 1.5, **more})


def written(values) -> bytes:
    """A line exactly as the store's writer writes it."""
    return store.encode_rows([values])


# Rows the writer makes from real kinds of values: each is shipped as it is.
WRITTEN = [
    row('plain'),
    row('quoted-"name"-\\-', check_fail_reason='a\ttab\nnewline "q" \\'),
    row('caf\u00e9-\u2603', check_fail_reason='\u00e9t\u00e9 \U0001F600'),
    row('numbers', check_perf_value=-1.25e-07, check_perf_ref=650000.0,
        check_perf_lower_thres=-0.1, check_num_tasks=176,
        check_perf_peak=1.7976931348623157e+30),
    row('lists', check_job_nodelist=['hbv4-0-000', 'hbv4-0-001'],
        check_tags=[], check_params={
            'benchmark': 'osu_bw', 'sizes': [8, 4194304], 'ok': True,
            'reference_differences': {'triad_bw': ['NTIMES 10, not 20']},
            'health': {'params': {'hca': 'mlx5_ib0'}}}),
    row('display', check_display_name="StreamCheck %.nid=['hbv4-0-000']"),
]


@pytest.mark.parametrize('values', WRITTEN, ids=lambda v: v['record_id'])
def test_a_written_line_ships_as_it_is_with_its_record_id(values):
    raw = written(values)
    parsed, nulled = store.parse_line(raw)
    assert nulled == [] and parsed == values
    assert verbatim.shippable(raw) == values['record_id']


def compact(values) -> str:
    return json.dumps(values, separators=(',', ':'))


def damaged(text: str, old: str, new: str) -> bytes:
    assert old in text
    return (text.replace(old, new, 1) + '\n').encode()


PLAIN = compact(row('r1'))
# Lines the fast path must leave to the reader, and why.
FOR_THE_READER = {
    'torn (no newline)': PLAIN.encode(),
    'NaN': damaged(PLAIN, '"check_perf_value":1.5', '"check_perf_value":NaN'),
    'Infinity': damaged(PLAIN, ':1.5', ':Infinity'),
    '-Infinity': damaged(PLAIN, ':1.5', ':-Infinity'),
    'a number that reads as infinity': damaged(PLAIN, ':1.5', ':1e999'),
    'a number too long to read': damaged(PLAIN, ':1.5', ':' + '9' * 5000),
    'NaN deep in a dynamic value': damaged(
        PLAIN, '"check_params":null', '"check_params":{"a":[NaN]}'),
    'a string in a real column': damaged(PLAIN, ':1.5', ':"fast"'),
    'a real in an int column': damaged(
        PLAIN, '"check_num_tasks":null', '"check_num_tasks":1.5'),
    'a numeric record_id': damaged(PLAIN, '"r1"', '12345'),
    'record_id first': ('{"record_id":"r1",' + PLAIN[1:].replace(
        '"record_id":"r1",', '') + '\n').encode(),
    'record_id twice': damaged(PLAIN, '"session_id"',
                               '"record_id":"r2","session_id"'),
    'no completion time': damaged(
        PLAIN, f'"check_job_completion_time":"{STAMP}"',
        '"check_job_completion_time":null'),
    'no record_id': damaged(PLAIN, '"r1"', 'null'),
    'spaces (another writer)': (json.dumps(row('r1')) + '\n').encode(),
    'a missing column': damaged(PLAIN, ',"reframe_version":null', ''),
    'a column more': damaged(PLAIN, '}', ',"extra":1}'),
    'raw UTF-8': damaged(PLAIN, '"T"', '"\u00e9"'),
    'CRLF': damaged(PLAIN, '}', '}\r'),
    'binary': b'\xff\xfe\x00\x9c binary\n',
    'a JSON array': b'[1,2,3]\n',
    'cut short, then a newline': (PLAIN[:700] + '\n').encode(),
    'a control character in a string': damaged(PLAIN, '"T"', '"T\x01"'),
    'a lone backslash': damaged(PLAIN, '"T"', '"T\\q"'),
}


@pytest.mark.parametrize('raw', FOR_THE_READER.values(),
                         ids=FOR_THE_READER.keys())
def test_any_other_line_is_left_to_the_reader(raw):
    assert verbatim.shippable(raw) is None


def test_an_escaped_record_id_is_read_as_json_reads_it():
    raw = damaged(PLAIN, '"record_id":"r1"', '"record_id":"r\\u0031\\"x"')
    assert verbatim.shippable(raw) == 'r1"x'
    assert store.parse_line(raw)[0]['record_id'] == 'r1"x'


def test_no_damage_to_a_written_line_gets_past_as_a_changed_or_bad_row():
    """Random bytes inserted, deleted or replaced in written lines: every
    line the fast path takes is a JSON object the reader reads unchanged,
    with the same record_id."""
    rng = random.Random(22)
    lines = [written(values) for values in WRITTEN]
    alphabet = b'"\\:,{}[]0123456789.eE+-ntrufalsNIy \x00\x7f\xff\n'
    taken = rejected = 0
    for _ in range(6000):
        raw = bytearray(rng.choice(lines))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(raw))
            action = rng.randrange(3)
            if action == 0:
                del raw[at]
            elif action == 1:
                raw.insert(at, rng.choice(alphabet))
            else:
                raw[at] = rng.choice(alphabet)
        raw = bytes(raw)
        record_id = verbatim.shippable(raw)
        if record_id is None:
            rejected += 1
            continue
        taken += 1
        parsed, nulled = store.parse_line(raw)
        assert nulled == [] and not store.retyped(raw, parsed)
        assert parsed['record_id'] == record_id
        assert parsed['check_job_completion_time']
        assert json.loads(raw) == parsed
    assert taken > 100 and rejected > 3000    # both paths were exercised


def test_sync_ships_written_lines_as_they_are_and_the_rest_as_before(
        tmp_path, fake_azure):
    """One session file holding written lines and every kind of line the
    fast path leaves to the reader, shipped through the real SDK: the
    written lines arrive byte for byte, NaN and wrong types as null, a
    numeric record_id as a string, a missing completion time filled in,
    torn and foreign lines skipped with a warning; the ledger holds every
    accepted row and the next sync sends nothing."""
    home = tmp_path / 'home'
    session = store_session(home, rows=0)
    kept = {
        'nan': damaged(compact(row('nan')), ':1.5', ':NaN'),
        'huge': damaged(compact(row('huge')), ':1.5', ':1e999'),
        'typed': damaged(compact(row('typed')), ':1.5', ':"fast"'),
        '12345': damaged(compact(row('x')), '"x"', '12345'),
        'first': ('{"record_id":"first",' + compact(row('first'))[1:]
                  .replace('"record_id":"first",', '') + '\n').encode(),
        'undated': damaged(compact(row('undated')),
                           f'"check_job_completion_time":"{STAMP}"',
                           '"check_job_completion_time":null'),
        'r1"x': damaged(compact(row('esc')), '"esc"', '"r\\u0031\\"x"'),
        'spaced': (json.dumps(row('spaced')) + '\n').encode(),
    }
    skipped = [b'\xff\xfe binary\n', b'[1,2,3]\n',
               (compact(row('cut'))[:600] + '\n').encode()]
    session.path.parent.mkdir(parents=True)
    with open(session.path, 'wb') as fp:
        for values in WRITTEN:
            fp.write(written(values))
        for raw in [*kept.values(), *skipped]:
            fp.write(raw)
        fp.write(compact(row('torn')).encode())      # no newline: torn
    env = session_env(tmp_path, fake_azure)

    synced = run_sync(env)
    assert synced.returncode == 0, synced.stderr
    assert 'Traceback' not in synced.stderr
    for number, what in ((7, 'NaN read as null'),
                         (8, '1e999 read as null'),
                         (9, 'check_perf_value (str, not real) read as null'),
                         (15, 'not UTF-8 text; skipped'),
                         (16, 'a JSON list, not an object; skipped')):
        assert f'{session.path} line {number}: {what}' in synced.stderr
    # the cut line (17) and the torn one (18): counted, as always
    assert f'{session.path}: 2 more line(s) with problems' in synced.stderr
    arrived = {r['record_id']: r for r in fake_azure.rows}
    wanted = [values['record_id'] for values in WRITTEN] + list(kept)
    assert sorted(arrived) == sorted(wanted)
    assert len(fake_azure.rows) == len(wanted)
    for values in WRITTEN:
        assert arrived[values['record_id']] == values
    for name in ('nan', 'huge', 'typed'):
        assert arrived[name]['check_perf_value'] is None
    assert arrived['undated']['check_job_completion_time'] == STAMP
    assert arrived['first']['check_perf_value'] == 1.5
    assert set(ledger.read_ledger(ledger.ledger_path(session.path))) == \
        set(wanted)
    again = run_sync(env)
    assert again.returncode == 0 and 'nothing to ship' in again.stdout
    assert len(fake_azure.rows) == len(wanted)


def test_the_benchmarks_endpoint_checks_what_it_holds(tmp_path, monkeypatch):
    """FakeAzure(hold_bodies=True), as tests/bench/bench_sync.py runs it:
    413 for a body over 1 MB of JSON however well it compresses, and every
    held body's rows decoded afterwards; a body that is no JSON array of
    objects fails there."""
    import gzip

    from config.results.azure import sync as backlog, shipping
    from tests.support.loopback_azure import FakeAzure, make_certificate
    fake = FakeAzure(hold_bodies=True, keep_alive=True)
    fake.cert, fake.key = make_certificate(tmp_path)
    fake.start()
    try:
        for name, value in {**fake.env(), 'REQUESTS_CA_BUNDLE': str(fake.cert),
                            'SSL_CERT_FILE': str(fake.cert)}.items():
            monkeypatch.setenv(name, value)
        send = backlog.default_transport()
        lines = [compact(row(f'h{index}')).encode() for index in range(3)]
        assert send(*shipping.encode_lines(
            [(None, line) for line in lines])).kind == shipping.ACCEPTED
        assert send(*shipping.encode_lines(
            [(None, lines[0])] * 2)).kind == shipping.ACCEPTED
        big = gzip.compress(b'[' + b','.join([lines[0]] * 1100) + b']')
        assert len(big) < 100_000
        assert send(big, True).kind == shipping.TOO_LARGE
        assert [r['record_id'] for r in fake.held_rows()] == \
            ['h0', 'h1', 'h2', 'h0', 'h0']
        assert send(b'[1,2]', False).kind == shipping.ACCEPTED
        with pytest.raises(ValueError):
            list(fake.held_rows())
    finally:
        fake.close()
