"""The project's ReFrame configuration with ReFrame's stock ``httpjson``
handler in place of the live push: one blocking POST per perf record, a
one-element JSON array each, as the project did before (the benchmark's
baseline; not for real use)."""
import json

from config import config as project
from config.results.azure import ingestion
from config.results.handlers import records, store_handler
from config.results.azure.live_push import HANDLER_TYPE


def one_row_per_post(record, extras, ignore_keys):
    if records.is_dry_run(record):
        return None
    return json.dumps([records.row_from_log_record(record,
                                                   store_handler.SESSION_ID)])


def _stock(handler: dict) -> dict:
    if handler.get('type') != HANDLER_TYPE:
        return handler
    return {'type': 'httpjson', 'url': handler['url'], 'level': 'info',
            'json_formatter': one_row_per_post,
            'authorization_header': ingestion.bearer_header,
            'backoff_intervals': [1, 2, 4, 8, 15], 'retry_timeout': 60}


site_configuration = dict(project.site_configuration)
site_configuration['logging'] = [
    {**entry, 'handlers_perflog': [_stock(h) for h in
                                   entry['handlers_perflog']]}
    for entry in project.site_configuration['logging']]
