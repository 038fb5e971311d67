"""A missing reference is null in a stored row, never ReFrame's 0, and rows
stored before with 0 read as having no reference."""
from config.results.handlers import records
from scripts.query import library
from scripts.query.runner import Runner
from tests.support.old_rows import old_row, write_rows
from tests.support.perf_records import perf_record


def test_a_variable_without_reference_stores_null_not_zero():
    row = records.row_from_log_record(perf_record(
        check_perf_ref=0, check_perf_lower_thres=None,
        check_perf_upper_thres=None), 'session-1')
    assert row['check_perf_result'] == 'no_reference'
    assert row['check_perf_ref'] is None


def test_old_rows_with_zero_and_no_reference_read_as_no_reference(tmp_path):
    # rows stored before this fix kept ReFrame's 0
    write_rows(tmp_path, [old_row(check_perf_ref=0.0,
                                  check_perf_result='no_reference')])
    runner = Runner(results_dir=tmp_path / 'results')
    query = library.Query('q', '', 'clusterproof_results | project '
                          'check_perf_ref, check_perf_result\n')
    assert runner.run(query).records() == [
        {'check_perf_ref': None, 'check_perf_result': 'no_reference'}]
    compared = runner.run('compare_clusters').records()
    assert [r['reference'] for r in compared] == [None]
