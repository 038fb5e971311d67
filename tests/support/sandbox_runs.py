"""Real ReFrame runs of the checks on the sandbox Slurm, with the replay
stand-ins first on PATH."""
import os

from scripts.cli import sandbox
from tests.support.helpers import (REPO, STANDINS, benchmark_rows, run_reframe,
                                   stored_rows)


# What the replayed recordings were run with: the stand-ins refuse any
# other input, so the checks are told to generate exactly this.
RECORDED_SIZES = ['-S', 'HplCheck.n=3000', '-S', 'HplCheck.nb=128',
                  '-S', 'HpcgCheck.nx=16', '-S', 'HpcgCheck.ny=16',
                  '-S', 'HpcgCheck.nz=16', '-S', 'HpcgCheck.runtime=10',
                  # the sandbox's default is smoke; HPL is sized above
                  '-S', 'HplCheck.size_profile=full']


def run_on_sandbox(slurm_sandbox, tmp_path, partition, *args, extra_env=None):
    env = {**os.environ, **slurm_sandbox.env,
           'CLUSTERPROOF_HOME': str(tmp_path / 'home'),
           'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}',
           **(extra_env or {})}
    for name in ('RFM_SYSTEM', 'DATA_COLLECTION_ENDPOINT', 'LOGS_DCR_RULE_ID'):
        env.pop(name, None)
    result = run_reframe('--system', f'sandbox:{partition}', *args, '-r',
                         '--prefix', str(tmp_path / 'rfm'),
                         env=env, cwd=str(REPO))
    rows = benchmark_rows(stored_rows(tmp_path / 'home'))
    return result, rows


def restart_dead_daemons(directory) -> list[str]:
    """Start the sandbox again where a daemon of it has died; returns the
    dead ones. Debian 12's slurmd (22.05.8) once segfaulted launching two
    steps of one job at once, and its node stayed down for every test after;
    now one crash fails the test it happened in, not the rest."""
    running = sandbox.running_daemons(directory)
    dead = sorted(set(sandbox.DAEMONS) - set(running))
    if dead:
        sandbox.start(directory, say=lambda _: None)
    return dead
