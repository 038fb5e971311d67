"""Scratch directories that two sessions on one filesystem never share.

The name holds the ReFrame session (login host and process id), the test's
hash and the batch job's id, so concurrent sessions (two admins, a cron
acceptance run beside an interactive one) never write, read or delete each
other's files. The job id is only known inside the job: the job script sets
it first (JOB_TAG_COMMAND) and the path refers to it as a shell variable.
"""
import os
import socket

JOB_TAG = 'CLUSTERPROOF_JOB_TAG'
#: First line of a job script that uses job_scratch_dir
JOB_TAG_COMMAND = f'{JOB_TAG}=${{SLURM_JOB_ID:-${{PBS_JOBID:-$$}}}}'

SESSION_TAG = f'{socket.gethostname().split(".")[0]}-{os.getpid()}'


def job_scratch_dir(base: str, prefix: str, test_hash: str) -> str:
    """``base/prefix-<session>-<test hash>-$CLUSTERPROOF_JOB_TAG``"""
    return os.path.join(
        base, f'{prefix}-{SESSION_TAG}-{test_hash}-${{{JOB_TAG}}}')
