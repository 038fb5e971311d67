"""--dry-run of the GPU and perftest checks through real ReFrame."""
import re

from tests.support.helpers import REPO, run_reframe, suite_env


ANSI = re.compile(r'\x1b\[[0-9;]*m')


DRY_LINE = re.compile(
    r'\[\s*DRY\s*\] (\S+) ((?:%\S+ )*%\S+) /(\w+) @(\S+?):(\S+?)\+(\S+)')


def clean_env(tmp_path, **extra):
    return suite_env(tmp_path / 'home', extra)


def dry_run(tmp_path, system, *args,
            checks=('checks/gpu/nccl.py', 'checks/network/perftest.py')):
    """--dry-run of the GPU and perftest checks: {(class, params): stage}."""
    prefix = tmp_path / 'rfm'
    files = [arg for path in checks for arg in ('-c', path)]
    result = run_reframe('--system', system, *files,
                         *args, '--dry-run', '--prefix', str(prefix),
                         env=clean_env(tmp_path), cwd=str(REPO))
    stdout = ANSI.sub('', result.stdout)
    assert result.returncode == 0, stdout + result.stderr
    stages = {}
    for match in DRY_LINE.finditer(stdout):
        name, params, digest, sysname, part, environ = match.groups()
        stages[(name, params)] = (prefix / 'stage' / sysname / part /
                                  environ / f'{name}_{digest}')
    return stages, stdout
