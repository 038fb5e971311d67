"""An empty answer says why, without reading the store again when the
query read rows; a construct the local engine cannot run is named in the
query's own terms."""
from scripts.query import empty, library
from scripts.query.runner import Runner
from tests.support.cli_runs import cli
from tests.support.helpers import REPO, suite_env
from tests.support.old_rows import old_row, write_rows


def test_an_empty_answer_says_why(tmp_path):
    outliers = library.resolve('node_outliers')
    assert empty.reason(Runner(results_dir=tmp_path / 'none'), outliers) == \
        'the local store holds no rows yet'
    write_rows(tmp_path, [old_row(check_perf_ref=500.0)])
    runner = Runner(results_dir=tmp_path / 'results')
    assert runner.run(outliers).rows == []
    assert empty.reason(runner, outliers).startswith(
        'no run measured a metric on 5 or more nodes')
    assert empty.reason(runner, library.resolve('trends')) is None


def test_an_unsupported_construct_is_named_in_the_query_s_terms(tmp_path):
    home = tmp_path / 'home'
    write_rows(home, [old_row()])
    own = tmp_path / 'mine.kql'
    own.write_text('clusterproof_results | summarize s = make_set_if(test, '
                   'true)\n')
    result = cli('query', str(own), env=suite_env(home), cwd=REPO)
    assert result.returncode == 1
    assert 'cannot run the aggregate make_set_if. Rewrite that part, or ' \
        'run it in Log Analytics (--workspace)' in result.stderr
    assert 'translate/' not in result.stderr and 'wave' not in result.stderr


def test_saying_why_reads_the_store_no_more_when_the_query_read_rows(
        tmp_path, monkeypatch):
    """The count behind 'holds no rows yet' reuses the query's own reading
    of the store (at 1M rows a second, full reading cost 17 s)."""
    from scripts.query import local
    write_rows(tmp_path, [old_row(check_perf_ref=500.0)])
    runner = Runner(results_dir=tmp_path / 'results')
    reads = []
    real_connect = local.connect
    monkeypatch.setattr(local, 'connect', lambda *args, **kwargs: (
        reads.append(args), real_connect(*args, **kwargs))[1])
    regressions = library.resolve('regressions')
    runner.run(regressions)
    assert len(reads) == 1
    assert empty.reason(runner, regressions) is None
    assert len(reads) == 1
