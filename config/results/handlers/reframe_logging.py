"""ReFrame's logging configuration: console, a log file, human perflogs, the
local store (store_handler.py) and, when configured, Azure Log Analytics."""
from __future__ import annotations

from .. import settings
from ..azure import ingestion
from ..store import files as store
from .store_handler import SESSION_ID, STORE_HANDLER


LOG_LEVEL_VARIABLE = settings.REFRAME_LOG_LEVEL


def log_level() -> str:
    return settings.reframe_log_level()


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
    azure = ingestion.handler_config(SESSION_ID)
    if azure is not None:
        perflog_handlers.append(azure)
    return [{
        'level': log_level(),
        'perflog_multiline': True,
        'handlers': [
            {'type': 'stream', 'name': 'stdout', 'level': 'info',
             'format': '%(message)s'},
            # Named by the session (its id starts with the time): two
            # sessions started in the same second keep a log each.
            {'type': 'file', 'name': str(logs / f'reframe_{SESSION_ID}.log'),
             'level': log_level(),
             'format': '[%(asctime)s] %(levelname)s: %(check_info)s: '
                       '%(message)s',
             'append': False},
        ],
        'handlers_perflog': perflog_handlers,
    }]
