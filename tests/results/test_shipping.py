"""The batching, retries and ledger shared by the live push and sync, on
their own: bodies under 1 MB, gzip when it helps, what each status means,
413 splits, 401/403 stop, the ledger after each 204, and POSIX locks."""
import gzip
import json
import subprocess
import sys

import pytest

from config.results import locks
from config.results.azure import ledger, shipping
from config.results.rows import schema as row_schema


def rows(count, padding=0):
    return [row_schema.make_row({'record_id': f'r{i:06d}',
                              'check_fail_reason': 'x' * padding or None})
            for i in range(count)]


def test_chunks_stay_under_the_limit_and_keep_every_row():
    many = rows(3000, padding=500)
    parts = list(shipping.chunks(many))
    assert len(parts) > 1
    assert [row for part in parts for row in part] == many
    for part in parts:
        body, gzipped = shipping.encode(part)
        assert len(json.dumps(part, separators=(',', ':'))) <= \
            shipping.MAX_BODY
        assert gzipped and len(body) <= shipping.MAX_BODY
        assert json.loads(gzip.decompress(body)) == part


def test_small_bodies_are_not_gzipped():
    body, gzipped = shipping.encode([{'record_id': 'a'}])
    assert not gzipped and json.loads(body) == [{'record_id': 'a'}]


@pytest.mark.parametrize('status, retry_after, kind, reason, wait', [
    (204, None, shipping.ACCEPTED, '', None),
    (429, '7', shipping.RETRY, '429', 7.0),
    (429, None, shipping.RETRY, '429', None),
    (502, None, shipping.RETRY, '502', None),
    (503, 'soon', shipping.RETRY, '503', None),
    (413, None, shipping.TOO_LARGE, '413 ContentLengthLimitExceeded', None),
    (400, None, shipping.REJECTED, '400 ContentLengthLimitExceeded', None),
    (401, None, shipping.UNAUTHORIZED, '401 ContentLengthLimitExceeded',
     None),
    (403, None, shipping.FORBIDDEN, '403 ContentLengthLimitExceeded', None),
])
def test_what_a_status_means(status, retry_after, kind, reason, wait):
    outcome = shipping.outcome_for_status(status, retry_after,
                                          'ContentLengthLimitExceeded')
    assert (outcome.kind, outcome.retry_after) == (kind, wait)
    if kind != shipping.ACCEPTED:
        assert outcome.reason == reason


def test_api_error_code_is_read_from_the_body():
    body = b'{"error": {"code": "InvalidStream", "message": "no"}}'
    assert shipping.api_error_code(body) == 'InvalidStream'
    assert shipping.api_error_code(b'<html>') is None


class ScriptedTransport:
    """Answers the outcomes given, then 204s; keeps every body it got."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.bodies = []

    def __call__(self, body, gzipped):
        raw = gzip.decompress(body) if gzipped else body
        self.bodies.append(json.loads(raw))
        if self.outcomes:
            return self.outcomes.pop(0)
        return shipping.Outcome(shipping.ACCEPTED)


def delivery(transport, accepted, waits, attempts=10):
    return shipping.Delivery(
        transport=transport, record=accepted.extend,
        tally=shipping.Tally(),
        give_up=lambda attempt, started: attempt + 1 >= attempts,
        wait=lambda seconds: (waits.append(seconds), True)[1])


def test_retries_honour_retry_after_and_back_off():
    transport = ScriptedTransport(
        shipping.outcome_for_status(429, '3'),
        shipping.outcome_for_status(503),
        shipping.outcome_for_status(503))
    accepted, waits = [], []
    shipper = delivery(transport, accepted, waits)
    shipper.ship(rows(4))
    assert [row['record_id'] for row in accepted] == \
        [f'r{i:06d}' for i in range(4)]
    assert 3.0 <= waits[0] <= 3.25
    assert 0.5 * 2 <= waits[1] <= 2 and 0.5 * 4 <= waits[2] <= 4
    assert shipper.tally.shipped == 4 and shipper.tally.calls == 4
    assert dict(shipper.tally.failures) == {'429': 1, '503': 2}


def test_413_splits_and_a_lone_oversized_row_is_set_aside():
    transport = ScriptedTransport(shipping.outcome_for_status(413),
                                  shipping.outcome_for_status(413))
    accepted, waits, aside = [], [], []
    shipper = delivery(transport, accepted, waits)
    shipper.set_aside = lambda row, size, reason: aside.append(
        (row['record_id'], size, reason))
    shipper.ship(rows(2))
    assert [len(body) for body in transport.bodies] == [2, 1, 1]
    assert len(accepted) == 1
    assert dict(shipper.tally.left) == {}
    assert len(aside) == 1 and aside[0][0] in ('r000000', 'r000001')
    assert aside[0][1] == shipping.row_size(rows(1)[0])
    assert sum(shipper.tally.aside.values()) == 1


def test_a_wrong_stream_is_refused_for_good_and_stops():
    transport = ScriptedTransport(
        shipping.outcome_for_status(404, None, 'InvalidStream'))
    accepted, waits = [], []
    shipper = delivery(transport, accepted, waits)
    shipper.max_body = 3000
    with pytest.raises(shipping.Refused) as stop:
        shipper.ship(rows(10))
    assert len(transport.bodies) == 1 and waits == []
    assert shipper.tally.left_total() == 10
    advice = shipping.auth_advice(stop.value.outcome)
    assert 'LOGS_DCR_STREAM_NAME' in advice and 'permanently' in advice


def test_nothing_is_sent_while_the_ledger_cannot_be_written():
    transport = ScriptedTransport()
    accepted, waits = [], []
    shipper = delivery(transport, accepted, waits)
    shipper.ready = lambda batch: 'cannot write the ledger x: Read-only'
    with pytest.raises(shipping.LedgerStop) as stop:
        shipper.ship(rows(3))
    assert transport.bodies == [] and len(stop.value.rest) == 3


def test_a_failed_ledger_write_stops_at_once():
    transport = ScriptedTransport()
    waits = []

    def record(batch):
        raise OSError(28, 'No space left on device')
    shipper = delivery(transport, [], waits)
    shipper.record = record
    shipper.max_body = 3000
    with pytest.raises(shipping.LedgerStop) as stop:
        shipper.ship(rows(10))
    assert len(transport.bodies) == 1
    assert len(stop.value.accepted) == len(transport.bodies[0])
    assert len(stop.value.accepted) + len(stop.value.rest) == 10
    assert shipper.tally.shipped == len(stop.value.accepted)


def test_retries_end_and_the_rows_are_left_with_the_reason():
    transport = ScriptedTransport(*[shipping.outcome_for_status(503)] * 5)
    accepted, waits = [], []
    shipper = delivery(transport, accepted, waits, attempts=3)
    shipper.ship(rows(3))
    assert accepted == [] and len(transport.bodies) == 3
    assert dict(shipper.tally.left) == {'503': 3}


def test_forbidden_stops_and_counts_every_row_left():
    transport = ScriptedTransport(shipping.outcome_for_status(403))
    accepted, waits = [], []
    shipper = delivery(transport, accepted, waits)
    shipper.max_body = 3000     # several bodies: all are left
    with pytest.raises(shipping.AuthStop) as stop:
        shipper.ship(rows(10))
    assert stop.value.outcome.kind == shipping.FORBIDDEN
    assert 'Monitoring Metrics Publisher' in \
        shipping.auth_advice(stop.value.outcome)
    assert shipper.tally.left_total() == 10 and len(transport.bodies) == 1


def test_one_unauthorized_is_retried_with_a_fresh_token():
    transport = ScriptedTransport(shipping.outcome_for_status(401))
    accepted, waits = [], []
    delivery(transport, accepted, waits).ship(rows(1))
    assert len(accepted) == 1 and waits == []


def test_ledger_appends_and_reads_back(tmp_path):
    path = ledger.ledger_path(tmp_path / 's.jsonl')
    book = ledger.Ledger(path)
    book.record(['a', 'b'], when=100)
    book.record(['b'], when=200)
    with open(path, 'a') as fp:
        fp.write('c 3')                      # a torn last line
    assert ledger.read_ledger(path) == {'a': 100, 'b': 200}
    assert path.name == 's.shipped'


def test_a_lock_held_by_another_process_is_seen(tmp_path):
    path = tmp_path / 'x.lock'
    holder = subprocess.Popen(
        [sys.executable, '-c',
         'import sys, fcntl, os; fd = os.open(sys.argv[1], os.O_RDWR | '
         'os.O_CREAT); fcntl.lockf(fd, fcntl.LOCK_EX); print("held", '
         'flush=True); sys.stdin.read()', str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'held'
        assert locks.is_locked(path)
        assert not locks.FileLock(path).acquire()
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert not locks.is_locked(path)
    lock = locks.FileLock(path)
    assert lock.acquire()
    lock.release()
