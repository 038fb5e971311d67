"""Runs ReFrame as `reframe` does, timing the main loop's perf logging:
every RegressionTask.log_result call (all perflog handlers of a test).
Writes {"seconds": ..., "records": ...} to $BENCH_TIMING_FILE at exit,
before ReFrame closes its handlers (their end-of-session flush is not the
main loop's time)."""
import atexit
import json
import os
import sys
import time

from reframe.frontend import executors

spent = {'seconds': 0.0, 'records': 0}
original = executors.RegressionTask.log_result


def timed_log_result(self):
    start = time.perf_counter()
    try:
        return original(self)
    finally:
        spent['seconds'] += time.perf_counter() - start
        spent['records'] += len(getattr(self.check, 'perfvalues', {}) or {})


def write_timing():
    with open(os.environ['BENCH_TIMING_FILE'], 'w') as fp:
        json.dump(spent, fp)


executors.RegressionTask.log_result = timed_log_result
# Registered after reframe.core.logging's shutdown, so it runs before it.
atexit.register(write_timing)

if __name__ == '__main__':
    from reframe.frontend.cli import main
    sys.exit(main())
