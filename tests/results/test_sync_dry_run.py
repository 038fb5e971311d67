"""`clusterproof sync --dry-run` needs no Azure: it lists the backlog and
says how to configure Azure, naming the resolved path."""
from tests.support.cli_runs import cli
from tests.support.helpers import REPO, suite_env
from tests.support.old_rows import old_row, write_rows


def test_sync_dry_run_without_azure_lists_the_backlog(tmp_path):
    home = tmp_path / 'home'
    write_rows(home, [old_row(), old_row(record_id='other')])
    result = cli('sync', '--dry-run', env=suite_env(home), cwd=REPO)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith('clusterproof sync: Azure Log Analytics is '
                               'not configured')
    # the hint names the resolved path, not $CLUSTERPROOF_HOME
    assert f'`source {home}/azure.env`' in lines[0]
    assert lines[1:] == [
        'clusterproof sync: would ship 2 row(s) of session '
        '20261130T100000Z-0000aaaa',
        'clusterproof sync: would ship 2 row(s) in all']
    shipping = cli('sync', env=suite_env(home), cwd=REPO)
    assert shipping.returncode == 2
    assert f'`source {home}/azure.env`' in shipping.stderr
