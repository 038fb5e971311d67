"""Where a test's binary comes from, and what to say when it is missing
(the variables are JobScript's: job_script.py)."""
from __future__ import annotations

import shlex
import shutil

from .job_end import GUARD_PREFIX


def guard_command(binary: str, hint: str) -> str:
    """Shell line that stops a job early, and says why, if ``binary`` is
    not on the compute node."""
    message = shlex.quote(f'{GUARD_PREFIX}{binary} not found on node ')
    advice = shlex.quote(f': {hint}' if hint else '')
    return (f'command -v {shlex.quote(binary)} >/dev/null 2>&1 || '
            f'{{ echo {message}"${{SLURMD_NODENAME:-$(hostname)}}"{advice} '
            f'>&2; exit 127; }}')


def missing_message(test) -> str:
    where = 'on PATH' if '/' not in test.tool_binary else 'at that path'
    hint = f'; {test.tool_hint}' if test.tool_hint else ''
    return (f'{test.tool_binary} not found {where}{hint} '
            f'(or point to it with -S tool_binary=PATH)')


def locate(test) -> None:
    """After setup: the tool is the executable; skip the test where
    the local system lacks it, else the job checks for it first."""
    if test.tool_is_executable:
        test.executable = test.tool_binary
    local = test.current_partition.scheduler.registered_name == 'local'
    setup = test.tool_setup_commands()
    if local and not (test.tool_loaded_by_job or setup):
        test.skip_if(shutil.which(test.tool_binary) is None,
                     missing_message(test))
    else:
        # The login node may lack what compute nodes have: check there.
        test.prerun_cmds[0:0] = [
            *setup, guard_command(test.tool_binary, test.tool_hint)]
