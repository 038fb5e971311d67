"""Smoke sizes on the embedded default, full sizes on clusters.

The README's first command runs the suite on the ``local`` system: a laptop
or a login node, where a memory-sized HPL would take hours. There a check
that sizes its problem from the node uses a small, quick problem instead;
its rows say so (``size_profile: smoke`` in check_params) and carry no
verdict, since a smoke size is never the method of a SKU's reference.
A partition whose nodes cannot hold a real size (the Slurm sandbox: four
fake nodes sharing one host's cores) says so with ``extras['size_profile']``.
"""
from __future__ import annotations

import reframe as rfm
from reframe.core.logging import getlogger

SMOKE = 'smoke'
FULL = 'full'
AUTO = 'auto'


def resolve(profile: str, scheduler: str, partition_default: str = '') -> str:
    """'auto' -> the partition's own default where it declares one, else
    smoke on the local scheduler and full on any batch system."""
    if profile not in (AUTO, SMOKE, FULL):
        raise ValueError(f"size_profile must be 'auto', 'smoke' or 'full', "
                         f'got {profile!r}')
    if profile != AUTO:
        return profile
    if partition_default:
        return resolve(partition_default, scheduler)
    return SMOKE if scheduler == 'local' else FULL


class SizeProfile(rfm.RegressionTestPlugin):
    #: 'auto' (smoke on the local system, full elsewhere), 'smoke' or 'full'
    size_profile = variable(str, value=AUTO)

    def is_smoke(self) -> bool:
        return self.size_profile == SMOKE

    @run_after('setup')
    def _resolve_size_profile(self):
        self.size_profile = resolve(
            self.size_profile,
            self.current_partition.scheduler.registered_name,
            self.current_partition.extras.get('size_profile', ''))
        if self.is_smoke():
            self.no_verdict_reasons = [*self.no_verdict_reasons,
                                       'smoke size']

    @run_before('run')
    def _say_it_is_a_smoke_size(self):
        # only for tests that run (not for those skipped for a missing tool)
        if self.is_smoke():
            getlogger().info(
                f'{self.name}: smoke size on {self.current_partition.fullname}'
                ' (quick problem, recorded without a verdict; '
                '-S size_profile=full for the real size)')
