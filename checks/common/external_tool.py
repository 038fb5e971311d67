"""Where a test's binary comes from, and what to say when it is missing."""
from __future__ import annotations

import shlex
import shutil

import reframe as rfm

from .parsed_output import GUARD_PREFIX


def guard_command(binary: str, hint: str) -> str:
    """Shell line that stops a job early, and says why, if ``binary`` is
    not on the compute node."""
    message = shlex.quote(f'{GUARD_PREFIX}{binary} not found on node ')
    advice = shlex.quote(f': {hint}' if hint else '')
    return (f'command -v {shlex.quote(binary)} >/dev/null 2>&1 || '
            f'{{ echo {message}"${{SLURMD_NODENAME:-$(hostname)}}"{advice} '
            f'>&2; exit 127; }}')


class ExternalTool(rfm.RegressionTestPlugin):
    #: Name on PATH or absolute path; override with ``-S tool_binary=...``.
    tool_binary = variable(str)

    #: How to get the tool (image path or module, Spack spec, package).
    tool_hint = variable(str, value='')

    #: Set to False for tests whose executable is a wrapper script that
    #: starts the tool itself.
    tool_is_executable = variable(bool, value=True)

    #: True where the job script itself makes the tool available (e.g. it
    #: loads a Spack build): then only the job can tell whether it is there.
    tool_loaded_by_job = variable(bool, value=False)

    def tool_missing_message(self) -> str:
        where = 'on PATH' if '/' not in self.tool_binary else 'at that path'
        hint = f'; {self.tool_hint}' if self.tool_hint else ''
        return (f'{self.tool_binary} not found {where}{hint} '
                f'(or point to it with -S tool_binary=PATH)')

    def tool_setup_commands(self) -> list[str]:
        """Shell lines that make the tool available in the job (spack.py:
        a Spack build's load); only the job can then tell whether the tool
        is there."""
        return []

    def locate_tool(self) -> None:
        """After setup: the tool is the executable; skip the test where
        the local system lacks it, else the job checks for it first."""
        if self.tool_is_executable:
            self.executable = self.tool_binary
        local = self.current_partition.scheduler.registered_name == 'local'
        setup = self.tool_setup_commands()
        if local and not (self.tool_loaded_by_job or setup):
            self.skip_if(shutil.which(self.tool_binary) is None,
                         self.tool_missing_message())
        else:
            # The login node may lack what compute nodes have: check there.
            self.prerun_cmds[0:0] = [
                *setup, guard_command(self.tool_binary, self.tool_hint)]
