"""The local store: one append-only file per session, readable while a
writer may have been cut mid-line."""
import json

from config.results.store import files as store


def test_rows_come_back_in_order_and_a_torn_line_is_skipped(tmp_path):
    first = store.SessionFile('20261130T100000Z-aaaaaaaa', tmp_path)
    second = store.SessionFile('20261201T090000Z-bbbbbbbb', tmp_path)
    first.append({'record_id': '1'})
    first.append({'record_id': '2'})
    second.append({'record_id': '3'})
    with open(second.path, 'a') as fp:      # a writer killed mid-line
        fp.write('{"record_id": "4", "check_perf_val')
    assert first.path.parent.name == '2026-11-30'
    assert second.path.parent.name == '2026-12-01'
    assert [row['record_id'] for row in store.iter_rows(tmp_path)] == \
        ['1', '2', '3']


def test_each_append_is_one_json_line(tmp_path):
    session = store.SessionFile(store.new_session_id(), tmp_path)
    session.append({'a': 1, 'b': [1, 2]})
    lines = session.path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{'a': 1, 'b': [1, 2]}]
