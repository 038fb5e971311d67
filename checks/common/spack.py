"""Benchmarks built by Spack, through ReFrame's Spack build system.

A check that gets its tool this way declares the build as a fixture::

    spack_build = fixture(SpackIor, scope='environment')

and lists ``FromSpack`` first among its bases: the build installs the
spec into a Spack environment in the fixture's stage directory (on the
login node, where Spack lives), and the check's job loads it from there. Without ``spack`` on
PATH the build, and so the check, is skipped with that reason.
"""
import os
import shutil

import reframe as rfm
import reframe.utility.sanity as sn

SPACK_ENV = 'rfm_spack_env'   # what ReFrame's Spack build system creates


class SpackBuild(rfm.CompileOnlyRegressionTest):
    descr = 'Spack build of a benchmark (fixture)'
    build_system = 'Spack'
    valid_systems = ['*']
    valid_prog_environs = ['*']

    #: The Spack spec to install, e.g. 'ior@4.0.0 ^openmpi'
    spec = variable(str)

    @run_before('compile')
    def set_spec(self):
        self.skip_if(shutil.which('spack') is None,
                     'spack is not on PATH: install Spack (spack.io), or '
                     'point the check at a binary with -S tool_binary=PATH')
        self.build_system.specs = [self.spec]
        # the check's job loads the spec itself
        self.build_system.emit_load_cmds = False

    @sanity_function
    def assert_installed(self):
        return sn.assert_not_found(r'==> Error', self.stderr,
                                   msg=f'spack could not install {self.spec}')

    def load_command(self) -> str:
        environment = os.path.join(self.stagedir, SPACK_ENV)
        return f'eval "$(spack -e {environment} load --sh {self.spec})"'


class FromSpack(rfm.RegressionTestPlugin):
    """Load the ``spack_build`` fixture's spec before the tool runs: a
    check lists it first among its bases, ahead of BenchmarkTest's
    JobScript, and carries the tag 'spack'."""

    def tool_setup_commands(self) -> list[str]:
        return [self.spack_build.load_command()]


class SpackIor(SpackBuild):
    spec = 'ior'


class SpackStream(SpackBuild):
    spec = 'stream +openmp'


class SpackHpl(SpackBuild):
    spec = 'hpl'


class SpackHpcg(SpackBuild):
    spec = 'hpcg'


class SpackOsu(SpackBuild):
    spec = 'osu-micro-benchmarks'
