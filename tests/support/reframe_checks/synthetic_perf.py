"""A quick ReFrame test for the reporting tests: CLUSTERPROOF_TEST_TESTS
tests (default 3), each with CLUSTERPROOF_TEST_METRICS perf variables
(default 2), measured from what the job itself prints. It runs on the
`local` system in about a second, so a session of many tests exercises the
real perflog handlers without any benchmark."""
import os

import reframe as rfm
import reframe.utility.sanity as sn

TESTS = int(os.environ.get('CLUSTERPROOF_TEST_TESTS', '3'))
METRICS = int(os.environ.get('CLUSTERPROOF_TEST_METRICS', '2'))
# Seconds each job sleeps, so that a session lasts long enough for an
# endpoint to come back in the middle of it.
SLEEP = os.environ.get('CLUSTERPROOF_TEST_SLEEP', '0')
# A test index whose job prints nothing, so that its sanity check fails.
FAIL = int(os.environ.get('CLUSTERPROOF_TEST_FAIL', '-1'))
# The job of this test index deletes this file first (a test frees room on
# a full disk at a defined record count).
FREE_AT = int(os.environ.get('CLUSTERPROOF_TEST_FREE_AT', '-1'))
FREE_FILE = os.environ.get('CLUSTERPROOF_TEST_FREE_FILE', '')


@rfm.simple_test
class SyntheticPerf(rfm.RunOnlyRegressionTest):
    index = parameter(range(TESTS))
    valid_systems = ['local']
    valid_prog_environs = ['builtin']
    executable = 'sh'
    tags = {'synthetic'}

    @run_before('run')
    def print_metrics(self):
        lines = ' '.join(f'metric_{m}={self.index * 100 + m}.5'
                         for m in range(METRICS)) if self.index != FAIL \
            else 'nothing'
        free = f'rm -f {FREE_FILE}; ' if self.index == FREE_AT and \
            FREE_FILE else ''
        self.executable_opts = ['-c', f"'{free}sleep {SLEEP}; for x in "
                                      f"{lines}; do echo $x; done'"]

    @sanity_function
    def printed_all(self):
        return sn.assert_eq(sn.count(sn.findall(r'metric_\d+=',
                                                self.stdout)),
                            METRICS)

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {
            f'metric_{m}': sn.make_performance_function(
                sn.extractsingle(rf'metric_{m}=(\S+)', self.stdout, 1,
                                 float), 'MB/s')
            for m in range(METRICS)}
