"""The embedded default stays quick: on the `local` system the checks that
size themselves from the node run a smoke size, say so, and their rows are
marked and carry no verdict. HPCC (Debian's) runs for real here."""
import shutil

import pytest

from tests.support.helpers import REPO, run_reframe, stored_rows, suite_env


@pytest.mark.skipif(shutil.which('hpcc') is None or
                    shutil.which('mpirun') is None,
                    reason='hpcc and Open MPI are installed by setup.sh --test')
def test_hpcc_on_local_is_a_marked_smoke_run(tmp_path):
    result = run_reframe('--system', 'local', '-c', 'checks/cpu/hpcc.py',
                         '-n', '^HpccNode$', '-r',
                         '--prefix', str(tmp_path / 'rfm'),
                         env=suite_env(tmp_path / 'home'), cwd=str(REPO))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'HpccNode: smoke size on local:default' in output
    rows = stored_rows(tmp_path / 'home')
    assert rows
    for row in rows:
        assert row['check_params']['size_profile'] == 'smoke'
        assert row['check_params']['problem_size'] == 2000
        assert row['check_params']['no_verdict_reasons'] == ['smoke size']
        assert row['check_perf_result'] in ('no_reference', 'informational')
    # a real measurement, and a real time limit on the local job too
    triad = next(row for row in rows
                 if row['check_perf_var'] == 'StarSTREAM_Triad')
    assert triad['check_perf_value'] > 0
    script = next((tmp_path / 'rfm').rglob('rfm_job.sh')).read_text()
    assert 'mpirun' in script and '--bind-to core' in script
