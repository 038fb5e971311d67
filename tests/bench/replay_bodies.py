"""The transport alone, for tests/bench/bench_sync.py: the bodies a sync
sent, posted again by the same SDK client (backlog.default_transport) with
UPLOADS calls in flight and nothing else to do: no store to read, no
ledger to write. What is left of sync's time above it is the client's own.

    .venv/bin/python -m tests.bench.replay_bodies DIR UPLOADS

DIR holds the bodies, one file each (*.gz sent gzip'd, *.json as they
are), sent in name order. Prints one JSON object: calls, the seconds from
the first call to the last answer, and the seconds before the first call
(the SDK's imports and its client). Exit 1 unless every call got a 204.
"""
from __future__ import annotations

import json
import queue
import sys
import threading
import time
from pathlib import Path


def main(argv=None) -> int:
    started = time.monotonic()
    directory, uploads = (argv or sys.argv[1:])[:2]
    from config.results.azure import sync as backlog, shipping
    transport = backlog.default_transport()
    bodies = queue.Queue()
    for path in sorted(Path(directory).iterdir()):
        bodies.put((path.read_bytes(), path.suffix == '.gz'))
    refused = []

    def upload():
        while True:
            try:
                body, gzipped = bodies.get_nowait()
            except queue.Empty:
                return
            outcome = transport(body, gzipped)
            if outcome.kind != shipping.ACCEPTED:
                refused.append(outcome.reason)
    calls = bodies.qsize()
    threads = [threading.Thread(target=upload) for _ in range(int(uploads))]
    first = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({'calls': calls, 'seconds': time.monotonic() - first,
                      'before_first_call': first - started,
                      'refused': refused}))
    return 1 if refused else 0


if __name__ == '__main__':
    sys.exit(main())
