"""ReFrame logging: console, a log file, human perflogs, the local store and,
when configured, Azure Log Analytics."""
from __future__ import annotations

import logging
import sys
import time

from reframe.core.exceptions import LoggingError
from reframe.core.logging import register_log_handler

from . import azure_logs, records, sessions, store

SESSION_ID = store.new_session_id()
STORE_HANDLER = 'clusterproof_store'


class StoreHandler(logging.Handler):
    """Appends the rows of each test to this session's store file, all of
    them at the test's first perf record (see records.rows_of_test), and says
    at the end where they went (ReFrame closes perflog handlers at exit)."""

    def __init__(self, session_id: str):
        super().__init__()
        self.session_id = session_id
        self.file = store.SessionFile(session_id)
        self._written = set()
        self._jobs = set()
        self._began = time.time()
        self._summarised = False

    def close(self):
        try:
            if not self._summarised:
                self._summarised = True
                self.summarise()
        finally:
            super().close()

    def summarise(self, out=None):
        """Print the store file, the session id and the row count, and link
        the session to ReFrame's own session UUID."""
        if not self._written:
            return
        out = out or sys.stdout
        found = sessions.find_reframe_session(
            self._jobs, self._began - 1,
            extra=sessions.configured_report_files())
        reframe_uuid = found[0] if found else None
        try:
            sessions.record({
                'session_id': self.session_id,
                'reframe_session_uuid': reframe_uuid,
                'report_file': str(found[1]) if found else None,
                'store_file': str(self.file.path),
                'rows': len(self._written),
            })
        except OSError as err:
            print(f'clusterproof: cannot write the session map: {err}',
                  file=out)
        line = (f'clusterproof: {len(self._written)} row(s) stored in '
                f'{self.file.path} (session {self.session_id}')
        line += f', ReFrame session {reframe_uuid})' if reframe_uuid else ')'
        print(line, file=out, flush=True)

    def emit(self, record):
        if records.is_dry_run(record):
            return
        try:
            fresh = [row for row in records.rows_of_test(record,
                                                         self.session_id)
                     if row['record_id'] not in self._written]
            if fresh:
                # One fsync per test, not per row: the main loop's time.
                self.file.append_rows(fresh)
                self._written.update(row['record_id'] for row in fresh)
                self._jobs.update((str(row['check_name']),
                                   str(row['check_jobid'])) for row in fresh)
        except (OSError, TypeError, ValueError) as err:
            raise LoggingError(
                f'clusterproof: cannot write the local store '
                f'{self.file.path}: {err}') from err


@register_log_handler(STORE_HANDLER)
def _create_store_handler(site_config, config_prefix):
    return StoreHandler(SESSION_ID)


def logging_config() -> list[dict]:
    logs = store.ensure_home('logs') / 'logs'
    perflog_handlers = [
        # First: the row is on disk before anything goes over the network.
        {'type': STORE_HANDLER, 'level': 'info'},
        {
            'type': 'filelog',
            'basedir': str(store.home() / 'perflogs'),
            'prefix': '%(check_system)s/%(check_partition)s',
            'level': 'info',
            'format': ('%(check_job_completion_time)s|reframe %(version)s|'
                       '%(check_info)s|jobid=%(check_jobid)s|'
                       '%(check_perf_var)s=%(check_perf_value)s|'
                       'ref=%(check_perf_ref)s '
                       '(l=%(check_perf_lower_thres)s, '
                       'u=%(check_perf_upper_thres)s)|'
                       '%(check_perf_unit)s|%(check_result)s'),
            'append': True,
        },
    ]
    azure = azure_logs.handler_config(SESSION_ID)
    if azure is not None:
        perflog_handlers.append(azure)
    return [{
        'level': 'debug',
        'perflog_multiline': True,
        'handlers': [
            {'type': 'stream', 'name': 'stdout', 'level': 'info',
             'format': '%(message)s'},
            {'type': 'file', 'name': str(logs / 'reframe.log'),
             'level': 'debug', 'timestamp': '%Y%m%dT%H%M%S',
             'format': '[%(asctime)s] %(levelname)s: %(check_info)s: '
                       '%(message)s',
             'append': False},
        ],
        'handlers_perflog': perflog_handlers,
    }]
