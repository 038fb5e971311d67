"""`sync`'s streaming path: the backlog read session by session, the
stored lines sent as they are, a bounded number of uploads in flight that
wait out a 429 together, and the ledger rules unchanged."""
import gzip
import json
import threading
import time

from config.results import backlog, ledger, records, shipping, store
from tests.test_sync import store_session


class SlowTransport:
    """Answers 204 after *latency*, or the outcomes given first; counts the
    uploads in flight and keeps every body and when each call started."""

    def __init__(self, latency=0.05, *outcomes):
        self.latency, self.outcomes = latency, list(outcomes)
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        self.bodies, self.started, self.answered = [], [], []

    def __call__(self, body, gzipped):
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.started.append(time.monotonic())
            self.bodies.append(gzip.decompress(body) if gzipped else body)
            outcome = self.outcomes.pop(0) if self.outcomes else None
        time.sleep(self.latency)
        with self.lock:
            self.in_flight -= 1
            if outcome is not None:
                self.answered.append(time.monotonic())
        return outcome or shipping.Outcome(shipping.ACCEPTED)


def stored_backlog(tmp_path, monkeypatch, sessions=3, rows=400):
    """Finished sessions of 4 KB rows, each written with one append."""
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path))
    files = []
    for serial in range(sessions):
        session = store.SessionFile(f'20261130T010203Z-{serial:08x}',
                                    tmp_path / 'results')
        stamp = '2026-11-30T01:00:00+00:00'
        session.append_rows([records.make_row({
            'record_id': f'{session.session_id}-{index:05d}',
            'session_id': session.session_id, 'TimeGenerated': stamp,
            'check_job_completion_time': stamp, 'check_name': 'Stored',
            'check_perf_var': f'metric_{index}', 'check_perf_value': 1.0,
            'check_fail_reason': 'x' * 3000}) for index in range(rows)])
        files.append(session)
    return files


def test_lines_go_out_as_stored_in_parallel_and_every_204_is_ledgered(
        tmp_path, monkeypatch):
    files = stored_backlog(tmp_path, monkeypatch)
    transport = SlowTransport(0.3)       # slower than reading a body
    found = backlog.StoredBacklog()
    tally, stopped = backlog.ship_stored(found.chunks(), transport,
                                         in_flight=3)
    assert stopped is None and tally.shipped == tally.offered == 1200
    assert transport.most_in_flight == 3
    # the bodies are the stored lines byte for byte, as one JSON array
    line_of = {json.loads(line)['record_id']: line for f in files
               for line in f.path.read_bytes().splitlines()}
    for body in transport.bodies:
        ids = [row['record_id'] for row in json.loads(body)]
        assert body == b'[' + b','.join(line_of[i] for i in ids) + b']'
    assert sum(len(json.loads(b)) for b in transport.bodies) == 1200
    assert all(len(body) <= shipping.MAX_BODY for body in transport.bodies)
    for f in files:
        assert len(ledger.read_ledger(ledger.ledger_path(f.path))) == 400
    again = backlog.StoredBacklog()
    assert next(again.items(), None) is None and again.estimate() == 0


def test_a_row_without_completion_time_gets_it_and_a_copy_goes_once(
        tmp_path, monkeypatch):
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path))
    session = store_session(tmp_path, rows=2, completion=False)
    with open(session.path, 'ab') as fp:       # a copy, and a torn line
        fp.write(session.path.read_bytes().splitlines(True)[0])
        fp.write(b'{"record_id": "torn"')
    items = list(backlog.StoredBacklog().items())
    assert len(items) == 2
    for record_id, line, _ in items:
        row = json.loads(line)
        assert row['record_id'] == record_id
        assert row['check_job_completion_time'] == row['TimeGenerated']


def test_a_429_holds_every_upload_for_its_retry_after(tmp_path,
                                                      monkeypatch):
    stored_backlog(tmp_path, monkeypatch, sessions=2)
    throttled = shipping.outcome_for_status(429, '0.5')
    transport = SlowTransport(0.05, throttled)
    tally, _ = backlog.ship_stored(backlog.StoredBacklog().chunks(),
                                   transport, in_flight=3)
    assert tally.shipped == 800 and tally.failures['429'] == 1
    [throttled_at] = transport.answered
    # a call that passed the throttle just before the 429 was known may
    # start a moment after it; every later one waits out Retry-After
    later = [t for t in transport.started if t > throttled_at + 0.1]
    assert later and min(later) >= throttled_at + 0.5


def test_forbidden_stops_the_uploads_and_leaves_every_other_row(
        tmp_path, monkeypatch):
    stored_backlog(tmp_path, monkeypatch)
    transport = SlowTransport(0.01, *[shipping.outcome_for_status(403)] * 3)
    tally, stopped = backlog.ship_stored(backlog.StoredBacklog().chunks(),
                                         transport, in_flight=3)
    assert stopped.kind == shipping.FORBIDDEN
    assert tally.shipped + tally.left_total() == tally.offered == 1200
    assert tally.left['403'] >= 400
    assert len(transport.bodies) < 10
