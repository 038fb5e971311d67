"""`sync`'s streaming path: the backlog read session by session, the
stored lines sent as they are, a bounded number of uploads in flight that
wait out a 429 together, and the ledger rules unchanged."""
import gzip
import json
import multiprocessing
import os
import sys
import threading
import time

import pytest

from config.results.azure import sync as backlog, ledger, shipping
from config.results.rows import schema as row_schema
from config.results.store import files as store, verbatim
from tests.support.reporting_helpers import store_session


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
        session.append_rows([row_schema.make_row({
            'record_id': f'{session.session_id}-{index:05d}',
            'session_id': session.session_id, 'TimeGenerated': stamp,
            'check_job_completion_time': stamp, 'check_name': 'Stored',
            'check_perf_var': f'metric_{index}', 'check_perf_value': 1.0,
            'check_fail_reason': 'x' * 3000}) for index in range(rows)])
        files.append(session)
    return files


@pytest.mark.parametrize('read_by', ['chunks', 'chunks_from_a_process'])
def test_lines_go_out_as_stored_in_parallel_and_every_204_is_ledgered(
        tmp_path, monkeypatch, read_by):
    files = stored_backlog(tmp_path, monkeypatch)
    transport = SlowTransport(0.3)       # slower than reading a body
    found = backlog.StoredBacklog()
    tally, stopped = backlog.ship_stored(getattr(found, read_by)(),
                                         transport, in_flight=3)
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


def test_the_reading_process_sends_what_this_one_would_read(
        tmp_path, monkeypatch):
    """sync's reading process: the same chunks as chunks(), each body made
    there, and what it counted (rows per session, rows set aside) comes
    back once the last chunk is read."""
    files = stored_backlog(tmp_path, monkeypatch, rows=300)
    ledger.set_aside(ledger.rejected_path(files[1].path),
                     {'record_id': f'{files[1].session_id}-00007'},
                     2_000_000, '413')
    here, there = backlog.StoredBacklog(), backlog.StoredBacklog()
    expected = list(here.chunks())
    received = list(there.chunks_from_a_process())
    assert [[item[:2] for item in c] for c in received] == \
        [[item[:2] for item in c] for c in expected]
    assert [c.packed for c in received] == \
        [shipping.LineChunk(c).packed for c in expected]
    assert all(isinstance(c, shipping.LineChunk) for c in received)
    assert [item[2].path for c in received for item in c] == \
        [item[2].path for c in expected for item in c]
    assert there.sessions == here.sessions == {
        f.session_id: 299 if f is files[1] else 300 for f in files}
    assert there.set_aside.keys() == here.set_aside.keys() == {
        f'{files[1].session_id}-00007'}
    assert multiprocessing.active_children() == []


def test_an_error_in_the_reading_process_is_raised_here(tmp_path,
                                                        monkeypatch):
    stored_backlog(tmp_path, monkeypatch)
    recognise, seen = verbatim.shippable, []

    def failing(raw):
        seen.append(raw)
        if len(seen) == 500:
            raise ValueError('the disk went away')
        return recognise(raw)
    monkeypatch.setattr(verbatim, 'shippable', failing)
    chunks = backlog.StoredBacklog().chunks_from_a_process()
    with pytest.raises(ValueError, match='the disk went away'):
        list(chunks)
    assert seen == []                # it was the other process that read
    assert multiprocessing.active_children() == []


def test_a_reading_process_that_dies_is_a_clear_error(tmp_path,
                                                      monkeypatch):
    stored_backlog(tmp_path, monkeypatch)
    monkeypatch.setattr(verbatim, 'shippable', lambda raw: os._exit(3))
    with pytest.raises(RuntimeError, match=r'exit code 3\).*sync` again'):
        list(backlog.StoredBacklog().chunks_from_a_process())


def test_a_sync_that_stops_reading_stops_the_reading_process(
        tmp_path, monkeypatch):
    stored_backlog(tmp_path, monkeypatch)
    chunks = backlog.StoredBacklog().chunks_from_a_process(limit=50_000)
    assert len(next(chunks)) > 0
    [reader] = multiprocessing.active_children()
    chunks.close()
    assert not reader.is_alive() and multiprocessing.active_children() == []


def test_the_reading_process_starts_at_once_and_close_stops_it(
        tmp_path, monkeypatch):
    """The process starts reading when it is made, before the first chunk
    is asked for (sync imports the Azure SDK meanwhile); closed unread, or
    left by a with block, it is stopped."""
    stored_backlog(tmp_path, monkeypatch)
    chunks = backlog.StoredBacklog().chunks_from_a_process()
    [reader] = multiprocessing.active_children()
    chunks.close()
    assert not reader.is_alive() and multiprocessing.active_children() == []
    with pytest.raises(ImportError):
        with backlog.StoredBacklog().chunks_from_a_process():
            assert len(multiprocessing.active_children()) == 1
            raise ImportError('No module named azure.identity')
    assert multiprocessing.active_children() == []


def test_a_chunk_goes_through_the_pipe_as_its_body_and_record_ids(
        tmp_path, monkeypatch):
    """Pickled, a LineChunk is its record_ids, ledgers, line lengths and
    body, a fraction of its lines; its lines, cut from the body again,
    are the stored lines, gzip'd body or not."""
    import pickle
    stored_backlog(tmp_path, monkeypatch, sessions=1, rows=200)
    [items] = list(backlog.StoredBacklog().chunks())
    chunk = shipping.LineChunk(items)
    sent = pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)
    assert len(sent) < sum(len(line) for _, line, _ in items) / 5
    received = pickle.loads(sent)
    assert received.packed == chunk.packed and received.packed[1]
    assert received.record_ids == [item[0] for item in items]
    assert [item[:2] for item in received] == [item[:2] for item in items]
    assert [item[2].path for item in received] == \
        [item[2].path for item in items]
    half = received[:100]
    assert isinstance(half, shipping.LineChunk)
    assert gzip.decompress(half.packed[0]) == \
        b'[' + b','.join(line for _, line, _ in items[:100]) + b']'
    small = pickle.loads(pickle.dumps(shipping.LineChunk([
        ('a', b'{"record_id":"a"}', items[0][2]),
        ('b', b'{"record_id":"b"}', items[0][2])])))
    assert small.packed == (b'[{"record_id":"a"},{"record_id":"b"}]', False)
    assert small[1][:2] == ('b', b'{"record_id":"b"}')


def test_a_413_halves_a_chunk_the_process_read(tmp_path, monkeypatch):
    """The halves of a chunk that came through the pipe are its stored
    lines, and each arrives once."""
    files = stored_backlog(tmp_path, monkeypatch, rows=200)
    transport = SlowTransport(0.0, shipping.outcome_for_status(413))
    tally, stopped = backlog.ship_stored(
        backlog.StoredBacklog().chunks_from_a_process(), transport,
        in_flight=1)
    assert stopped is None and tally.shipped == tally.offered == 600
    assert tally.failures == {'413': 1}
    line_of = {json.loads(line)['record_id']: line for f in files
               for line in f.path.read_bytes().splitlines()}
    ids = []
    for body in transport.bodies[1:]:
        sent = [row['record_id'] for row in json.loads(body)]
        assert body == b'[' + b','.join(line_of[i] for i in sent) + b']'
        ids += sent
    assert sorted(ids) == sorted(line_of)
    refused, first, second = (len(json.loads(body))
                              for body in transport.bodies[:3])
    assert first + second == refused and abs(first - second) <= 1


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


def ship_in_a_thread(chunks, transport, in_flight=3, timeout=60):
    """ship_stored's answer, or the exception it raised; fails when it is
    still running after *timeout* seconds (an upload died: a hang)."""
    answer = []

    def run():
        try:
            answer.append(backlog.ship_stored(chunks, transport,
                                              in_flight=in_flight))
        except Exception as err:
            answer.append(err)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), 'ship_stored hangs'
    return answer[0]


def test_a_transport_that_fails_at_once_is_raised_and_nothing_is_sent(
        tmp_path, monkeypatch):
    files = stored_backlog(tmp_path, monkeypatch)

    def no_sdk(body, gzipped):
        raise ImportError('No module named azure.monitor.ingestion')
    interval = sys.getswitchinterval()
    raised = ship_in_a_thread(backlog.StoredBacklog().chunks(), no_sdk)
    assert isinstance(raised, ImportError)
    assert 'azure.monitor.ingestion' in str(raised)
    assert sys.getswitchinterval() == interval
    for f in files:
        assert ledger.read_ledger(ledger.ledger_path(f.path)) == {}
    assert sum(len(c) for c in backlog.StoredBacklog().chunks()) == 1200


def test_an_upload_that_crashes_stops_the_rest_and_is_raised(
        tmp_path, monkeypatch):
    """An exception no upload expects (a bug, not an HTTP answer): no
    hang, every 204 before it in its ledger, the rest left for next time,
    the exception raised where sync called."""
    stored_backlog(tmp_path, monkeypatch)
    slow = SlowTransport(0.02)

    def transport(body, gzipped):
        if len(slow.bodies) == 2:
            raise RuntimeError('a bug in the transport')
        return slow(body, gzipped)
    raised = ship_in_a_thread(backlog.StoredBacklog().chunks(), transport,
                              in_flight=1)
    assert isinstance(raised, RuntimeError)
    sent = [row['record_id'] for body in slow.bodies
            for row in json.loads(body)]
    assert len(sent) == len(set(sent)) > 0
    shipped = set(backlog.accepted_everywhere(store.session_files()))
    assert shipped == set(sent)
    left = sum(len(c) for c in backlog.StoredBacklog().chunks())
    assert left == 1200 - len(sent)


def test_the_bodies_are_full_across_session_files(tmp_path, monkeypatch):
    """Each chunk takes rows until the next would pass the limit, from one
    session file into the next; a row stored twice comes once."""
    files = stored_backlog(tmp_path, monkeypatch, sessions=3, rows=100)
    with open(files[1].path, 'ab') as fp:         # a copy of another's row
        fp.write(files[0].path.read_bytes().splitlines(True)[5])
    limit = 50_000
    chunks = list(backlog.StoredBacklog().chunks(limit))
    sizes = [2 + sum(len(line) + 1 for _, line, _ in c) for c in chunks]
    assert all(size <= limit for size in sizes)
    for chunk, following in zip(chunks, chunks[1:]):
        assert 2 + sum(len(line) + 1 for _, line, _ in chunk) + \
            len(following[0][1]) + 1 > limit
    assert any(len({item[2].path for item in c}) == 2 for c in chunks)
    ids = [item[0] for c in chunks for item in c]
    assert len(ids) == len(set(ids)) == 300


def test_line_numbers_run_on_across_the_blocks_of_a_long_file(
        tmp_path, monkeypatch, capsys):
    """Lines are read a megabyte at a time (store.file_blocks): a bad line
    past the first block is named by its line number in the file."""
    [session] = stored_backlog(tmp_path, monkeypatch, sessions=1, rows=400)
    assert session.path.stat().st_size > store.BLOCK
    with open(session.path, 'ab') as fp:
        fp.write(b'{"record_id": "not ended"\n')
    assert sum(len(c) for c in backlog.StoredBacklog().chunks()) == 400
    assert f'{session.path} line 401: not JSON; skipped' in \
        capsys.readouterr().err
