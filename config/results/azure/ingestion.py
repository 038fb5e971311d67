"""Settings of Azure Monitor's Logs Ingestion API and the live push's
perflog handler (config/results/azure/live_push.py).

Enabled when DATA_COLLECTION_ENDPOINT and LOGS_DCR_RULE_ID are set. Every
callable ReFrame calls here raises nothing but LoggingError: any other
exception would stop the whole ReFrame session. The rows sent are the ones
the local store already holds (same record_id), so `clusterproof sync`
ships what the live push could not.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sys
import urllib.parse

from ..handlers import records
from . import shipping
from .. import settings as settings_of

# ReFrame (LoggingError, live_push's handler) is imported where the live
# push needs it: sync, query and acceptance read these settings without
# paying ReFrame's import (about a second).

API_VERSION = '2023-01-01'
SCOPE = 'https://monitor.azure.com/.default'
DEFAULT_STREAM = 'Custom-ReFrameResults_CL'
DEFAULT_QUERY_ENDPOINT = 'https://api.loganalytics.io'
RULE_ID = re.compile(r'dcr-[0-9a-f]{32}')


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


def problems(found: dict) -> list[str]:
    """What is wrong with the settings, in words a user can act on."""
    found_problems = []
    url = urllib.parse.urlparse(found['endpoint'])
    if url.scheme != 'https' or not url.hostname:
        found_problems.append(
            f"DATA_COLLECTION_ENDPOINT={found['endpoint']!r} is not an "
            f'https URL (the logs ingestion endpoint of the data collection '
            f'endpoint, https://<name>.<region>.ingest.monitor.azure.com)')
    if not RULE_ID.fullmatch(found['rule_id']):
        found_problems.append(
            f"LOGS_DCR_RULE_ID={found['rule_id']!r} is not a data collection "
            f"rule's immutable id ('dcr-' and 32 hex digits)")
    if not found['stream'].startswith('Custom-'):
        found_problems.append(
            f"LOGS_DCR_STREAM_NAME={found['stream']!r} does not start with "
            f"'Custom-' (default {DEFAULT_STREAM})")
    return found_problems


def workspace_settings() -> dict | None:
    """Where `sync --verify` (and queries) read Log Analytics, or None."""
    workspace = os.environ.get('LOGS_WORKSPACE_ID', '').strip()
    if not workspace:
        return None
    return {'workspace_id': workspace, 'endpoint': query_endpoint()}


def query_endpoint() -> str:
    """The Log Analytics query API (LOGS_QUERY_ENDPOINT for another cloud)."""
    endpoint = (os.environ.get('LOGS_QUERY_ENDPOINT', '').strip()
                or DEFAULT_QUERY_ENDPOINT)
    return endpoint.rstrip('/')


def ingestion_url(endpoint: str, rule_id: str, stream: str) -> str:
    return (f'{endpoint}/dataCollectionRules/{rule_id}/streams/{stream}'
            f'?api-version={API_VERSION}')


_credential = None


def credential():
    return _get_credential()


#: What the commands say when DefaultAzureCredential finds no identity.
NO_CREDENTIAL = ('no Azure credential: DefaultAzureCredential found no '
                 'identity (managed identity, az login, workload identity or '
                 'service principal variables); run `az login`, or run where '
                 'the VM has a managed identity')


def _get_credential():
    global _credential
    if _credential is None:
        from azure.identity import DefaultAzureCredential
        # azure-identity logs each credential it tried, at WARNING: the
        # commands say in one line that none was found (NO_CREDENTIAL).
        # The shared token cache credential would create ~/.IdentityService
        # (a Windows tools' cache); `az login` is AzureCliCredential's.
        logging.getLogger('azure.identity').setLevel(logging.ERROR)
        _credential = DefaultAzureCredential(
            exclude_shared_token_cache_credential=True)
    return _credential


def bearer_header() -> str:
    """A fresh Authorization value before every POST (tokens expire during
    long sessions; azure-identity caches until close to expiry)."""
    try:
        token = _get_credential().get_token(SCOPE)
    except Exception as err:
        from reframe.core.exceptions import LoggingError
        raise LoggingError(
            f'clusterproof: no Azure token for {SCOPE} '
            f'({type(err).__name__}); the record stays in the local store'
        ) from None
    return f'Bearer {token.token}'


def make_formatter(session_id: str):
    formatted = set()

    def format_for_ingestion(record, extras, ignore_keys):
        """At a test's first record, the JSON array of all its rows (the
        API drops a bare object); None for its other records."""
        try:
            if records.is_dry_run(record):
                return None
            rows = [shipping.with_completion_time(row) for row in
                    records.rows_of_test(record, session_id)
                    if row['record_id'] not in formatted]
            if not rows:
                return None
            formatted.update(row['record_id'] for row in rows)
            return json.dumps(rows, allow_nan=False)
        except Exception as err:
            from reframe.core.exceptions import LoggingError
            raise LoggingError(
                f'clusterproof: cannot format perf record: {err}') from err

    return format_for_ingestion


def flush_timeout() -> float:
    """Seconds the live push may take at session end before it leaves the
    rest to `clusterproof sync` (CLUSTERPROOF_FLUSH_TIMEOUT, default 30)."""
    return settings_of.flush_timeout()


def handler_config(session_id: str) -> dict | None:
    """The live push's perflog handler, or None when Azure is not configured
    or misconfigured (then one warning, and the run stores locally)."""
    found = settings()
    if found is None:
        return None
    wrong = problems(found)
    if wrong:
        print('WARNING: clusterproof: not sending results to Log Analytics '
              'in this session: ' + '; '.join(wrong) + '. Every result is '
              "still stored locally; fix the setting and run 'clusterproof "
              "sync' to ship them.", file=sys.stderr, flush=True)
        return None
    from . import live_push
    return {
        'type': live_push.HANDLER_TYPE,
        'url': ingestion_url(**found),
        'level': 'info',
        'session_id': session_id,
        'json_formatter': make_formatter(session_id),
        'authorization_header': bearer_header,
        'backoff_intervals': live_push.DEFAULT_BACKOFF,
        # 0: retry a batch until the session ends, then leave it to sync
        'retry_timeout': 0,
        'flush_timeout': flush_timeout(),
    }
