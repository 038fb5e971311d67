"""A job the partition can never hold is skipped at submission, a job killed
at its time limit is named as such, and a line says what is still waiting."""
import pytest

from checks.common import job_end, node_fit, progress
from tests.support.helpers import DATA, REPO, run_reframe, suite_env

TIME_LIMIT_ERR = DATA / 'slurm' / 'time_limit.err'


def test_a_request_larger_than_the_nodes_is_named():
    reason = node_fit.unsatisfiable_reason(
        'StreamCheck', 'sandbox:hbv4', 2, 'processor.num_cpus', None, 48)
    assert reason == ('StreamCheck asks for 48 CPUs per task, but the nodes '
                      'of sandbox:hbv4 have 2 (processor.num_cpus): the '
                      'scheduler would keep the job pending forever')
    tasks = node_fit.unsatisfiable_reason('X', 'p', 8, 's', 4, 4, 'use -S n')
    assert tasks.startswith('X asks for 4 task(s) x 4 CPU(s) = 16 CPUs per node')
    assert tasks.endswith('; use -S n')


@pytest.mark.parametrize('node_cpus, tasks, cpus', [
    (2, 2, 1), (2, None, 2), (176, None, 48), (None, None, 48), (2, None, None)])
def test_a_request_that_fits_or_an_unknown_node_is_not_skipped(node_cpus, tasks, cpus):
    assert node_fit.unsatisfiable_reason('X', 'p', node_cpus, 's', tasks, cpus) is None


def test_stream_with_the_hbv4_method_is_skipped_on_the_two_core_sandbox(tmp_path):
    # --dry-run runs the pre-submission hooks without a scheduler: the same
    # StreamCheck fits HBv4's 176 cores and is skipped on 2-core nodes.
    env = suite_env(tmp_path / 'home')
    outputs = {}
    for system in ('sandbox:hbv4', 'azure:hbv4'):
        result = run_reframe('--system', system, '-c', 'checks/cpu/stream.py',
                             '-n', '^StreamCheck$', '--dry-run',
                             '--prefix', str(tmp_path / system),
                             env=env, cwd=str(REPO), timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        outputs[system] = result.stdout
    assert ('StreamCheck asks for 48 CPUs per task, but the nodes of '
            'sandbox:hbv4 have 2') in outputs['sandbox:hbv4']
    assert '1 skipped' in outputs['sandbox:hbv4']
    assert '0 skipped' in outputs['azure:hbv4']


def test_a_time_limit_kill_is_named_from_the_job_state():
    reason = job_end.time_limit_reason('TIMEOUT', 660, None)
    assert reason == ('killed at its time limit of 11 min (scheduler job '
                      'state TIMEOUT); raise it with -S time_limit=... or '
                      '-S time_limit_factor=...')
    assert job_end.time_limit_reason('COMPLETED', 660, None) is None
    assert job_end.time_limit_reason('FAILED', 90, '/nonexistent') is None


def test_a_time_limit_kill_is_named_from_slurmstepd_where_the_state_is_lost():
    # ReFrame's squeue scheduler reports a vanished job as COMPLETED
    reason = job_end.time_limit_reason('COMPLETED', 90, str(TIME_LIMIT_ERR))
    assert reason.startswith('killed at its time limit of 90 s (job stderr: '
                             'slurmstepd-sb-n1: error: *** JOB 1 ON sb-n1 '
                             'CANCELLED AT 2026-12-01T08:56:27 DUE TO TIME LIMIT')


def test_progress_names_the_job_waiting_longest():
    now = 1000.0
    waiting = [('HpccNode on sandbox:hbv4', '12', now - 30, 'RUNNING'),
               ('StreamCheck on sandbox:ndv5', '9', now - 200, 'PENDING'),
               ('IorCheck on sandbox:hbv4', '13', now - 5, None)]
    assert progress.progress_line(waiting, now) == (
        'clusterproof: 2 job(s) pending, 1 running; waiting longest: '
        'StreamCheck on sandbox:ndv5 (job 9, PENDING for 3 min 20 s)')
    assert progress.progress_line([], now) is None
    assert progress.is_active('PENDING') and progress.is_active(None)
    assert not progress.is_active('TIMEOUT') and not progress.is_active('SUCCESS')


def test_progress_interval_defaults_to_a_minute():
    assert progress.interval_s({}) == 60
    assert progress.interval_s({'CLUSTERPROOF_PROGRESS_S': '5'}) == 5
    assert progress.interval_s({'CLUSTERPROOF_PROGRESS_S': 'x'}) == 60
