"""Ship perf records to Azure Monitor's Logs Ingestion API through ReFrame's
``httpjson`` perflog handler.

Enabled when DATA_COLLECTION_ENDPOINT and LOGS_DCR_RULE_ID are set. Every
callable here raises nothing but LoggingError: any other exception would
stop the whole ReFrame session. The row sent is the one the local store
already holds (same record_id), so a later sync can ship what failed here.
"""
from __future__ import annotations

import json
import os

from reframe.core.exceptions import LoggingError

from . import records

API_VERSION = '2023-01-01'
SCOPE = 'https://monitor.azure.com/.default'
DEFAULT_STREAM = 'Custom-ReFrameResults_CL'


def settings() -> dict | None:
    """Endpoint, DCR and stream from the environment, or None if unset."""
    endpoint = os.environ.get('DATA_COLLECTION_ENDPOINT', '').strip()
    rule_id = os.environ.get('LOGS_DCR_RULE_ID', '').strip()
    if not endpoint or not rule_id:
        return None
    stream = (os.environ.get('LOGS_DCR_STREAM_NAME', '').strip()
              or DEFAULT_STREAM)
    return {'endpoint': endpoint.rstrip('/'), 'rule_id': rule_id,
            'stream': stream}


def ingestion_url(endpoint: str, rule_id: str, stream: str) -> str:
    return (f'{endpoint}/dataCollectionRules/{rule_id}/streams/{stream}'
            f'?api-version={API_VERSION}')


_credential = None


def _get_credential():
    global _credential
    if _credential is None:
        from azure.identity import DefaultAzureCredential
        _credential = DefaultAzureCredential()
    return _credential


def bearer_header() -> str:
    """A fresh Authorization value before every POST (tokens expire during
    long sessions; azure-identity caches until close to expiry)."""
    try:
        token = _get_credential().get_token(SCOPE)
    except Exception as err:
        raise LoggingError(
            f'clusterproof: no Azure token for {SCOPE} '
            f'({type(err).__name__}); the record stays in the local store'
        ) from None
    return f'Bearer {token.token}'


def make_formatter(session_id: str):
    def format_for_ingestion(record, extras, ignore_keys):
        """One-element JSON array (the API drops a bare object)."""
        try:
            if records.is_dry_run(record):
                return None
            row = records.row_from_log_record(record, session_id)
            return json.dumps([row], allow_nan=False)
        except Exception as err:
            raise LoggingError(
                f'clusterproof: cannot format perf record: {err}') from err

    return format_for_ingestion


def handler_config(session_id: str) -> dict | None:
    found = settings()
    if found is None:
        return None
    return {
        'type': 'httpjson',
        'url': ingestion_url(**found),
        'level': 'info',
        'json_formatter': make_formatter(session_id),
        'authorization_header': bearer_header,
        # Only 429 is retried by ReFrame; give throttling a minute.
        'backoff_intervals': [1, 2, 4, 8, 15],
        'retry_timeout': 60,
    }
