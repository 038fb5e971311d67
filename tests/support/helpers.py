"""Small helpers shared by the tests."""
from pathlib import Path

DATA = Path(__file__).resolve().parent / 'data'
STANDINS = Path(__file__).resolve().parent / 'standins'
REPO = Path(__file__).resolve().parents[2]


def read_data(tool: str, name: str) -> str:
    return (DATA / tool / name).read_text(errors='replace')


def reframe_command(*args: str) -> list[str]:
    """The reframe of the Python running the tests, with our config."""
    import sys
    reframe = Path(sys.executable).parent / 'reframe'
    return [str(reframe), '-C', str(REPO / 'config' / 'config.py'), *args]


def run_reframe(*args: str, env: dict, cwd, timeout: int = 600):
    """Run ReFrame for real; output captured; never raises on failure."""
    import subprocess
    return subprocess.run(reframe_command(*args), env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def stored_rows(home: Path) -> list[dict]:
    import json
    rows = []
    for path in sorted((home / 'results').glob('*/*.jsonl')):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows


def benchmark_rows(rows: list[dict]) -> list[dict]:
    """The rows of what the benchmarks measured, without the health
    samples' rows around them (facility clusterproof-health)."""
    return [row for row in rows if row['facility'] != 'clusterproof-health']


def suite_env(home: Path, extra: dict | None = None) -> dict:
    """This process's environment without anything that would send results
    to Azure, ask the instance metadata service or pick a system, and with
    its own CLUSTERPROOF_HOME."""
    import os
    drop = ('RFM_', 'DATA_COLLECTION', 'LOGS_DCR', 'IDENTITY_',
            'CLUSTERPROOF_REPLAY', 'CLUSTERPROOF_STANDIN',
            # a test's jobs ask a metadata URL only when the test sets one
            'CLUSTERPROOF_IMDS_URL')
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env['CLUSTERPROOF_HOME'] = str(home)
    env.update(extra or {})
    return env


def dry_run_job_scripts(tmp_path: Path, target: str, *selection: str,
                        env: dict | None = None,
                        checks: str = 'checks') -> dict[str, str]:
    """Job scripts ReFrame writes with --dry-run, by test directory name.
    ``checks``: the check file (or directory) ReFrame loads; one file
    loads in about half the time of the whole directory."""
    prefix = tmp_path / 'rfm'
    result = run_reframe('--system', target, '-c', checks, *selection,
                         '--dry-run', '--prefix', str(prefix),
                         env=env or suite_env(tmp_path / 'home'),
                         cwd=str(REPO), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return {path.parent.name: path.read_text()
            for path in prefix.rglob('rfm_job.sh')}


def only_job_script(tmp_path: Path, target: str, name_filter: str,
                    checks: str = 'checks') -> str:
    scripts = dry_run_job_scripts(tmp_path, target, '-n', name_filter,
                                  checks=checks)
    assert len(scripts) == 1, sorted(scripts)
    return next(iter(scripts.values()))
