"""Rows as an older clusterproof stored them, written into a store by hand
(one session file of 30 November 2026)."""
import json

from config.results.handlers import records
from tests.support.perf_records import perf_record


def write_rows(home, rows):
    day = home / 'results' / '2026-11-30'
    day.mkdir(parents=True)
    (day / '20261130T100000Z-0000aaaa.jsonl').write_text(
        ''.join(json.dumps(row) + '\n' for row in rows))


def old_row(**values):
    row = records.row_from_log_record(perf_record(
        check_perf_lower_thres=None, check_perf_upper_thres=None), 's-old')
    row.update(session_id='20261130T100000Z-0000aaaa', **values)
    return row
