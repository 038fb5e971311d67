"""latest_by_node: the latest run of a test on a node speaks for it, a
failing metric of that run first, whatever job ids earlier runs had."""
import datetime as dt
import json

from scripts.query import library, local
from tests.support import query_store

DAY = dt.datetime(2026, 11, 10, 8, 0, tzinfo=dt.timezone.utc)


def _stream(session: str, when: dt.datetime, jobid: str, var: str,
            result: str) -> dict:
    return query_store._row(
        session, when, record_id=f'{session}-{var}', cluster='c1',
        check_system='azure', check_partition='hbv4',
        vm_sku=query_store.HB_SKU, check_name='StreamCheck',
        check_display_name='StreamCheck %.part=azure:hbv4',
        check_perf_var=var, check_perf_value=1.0, check_perf_unit='MB/s',
        check_perf_result=result, check_result=result,
        check_fail_reason=f'{var} below reference' if result == 'fail'
        else None, check_jobid=jobid, check_job_nodelist=['hb-1'])


def _latest(tmp_path, sessions: dict) -> list[dict]:
    for session, rows in sessions.items():
        path = tmp_path / 'results' / '2026-11-10' / f'{session}.jsonl'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(''.join(json.dumps(row) + '\n' for row in rows))
    con = local.connect(tmp_path / 'results')
    rows = local.run(con, library.resolve('latest_by_node').text).records()
    return [(row['check_result'], row['completed'], row['check_jobid'],
             row['check_fail_reason']) for row in rows]


def test_a_job_id_used_again_names_a_new_run(tmp_path):
    """A scheduler rebuilt numbers its jobs from the start again: the
    passing run of today is the latest, not yesterday's failure of job 7."""
    later = DAY + dt.timedelta(days=1)
    assert _latest(tmp_path, {
        'old': [_stream('old', DAY, '7', 'triad_bw', 'fail')],
        'new': [_stream('new', later, '7', 'triad_bw', 'pass')],
    }) == [('pass', later, '7', None)]


def test_a_failing_metric_speaks_for_its_run(tmp_path):
    later = DAY + dt.timedelta(days=1)
    assert _latest(tmp_path, {
        'old': [_stream('old', DAY, '7', 'copy_bw', 'pass')],
        'new': [_stream('new', later, '9', 'copy_bw', 'pass'),
                _stream('new', later, '9', 'triad_bw', 'fail'),
                _stream('new', later, '9', 'scale_bw', 'pass')],
    }) == [('fail', later, '9', 'triad_bw below reference')]
