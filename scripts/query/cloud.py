"""Run KQL in Log Analytics: azure-monitor-query's LogsQueryClient with
DefaultAzureCredential (managed identity, az login, workload identity or
service principal variables). LOGS_QUERY_ENDPOINT points at another cloud's
Log Analytics API (default https://api.loganalytics.io)."""
from __future__ import annotations

from azure.core.exceptions import (AzureError, ClientAuthenticationError,
                                   HttpResponseError)
from azure.monitor.query import LogsQueryClient, LogsQueryStatus

from config.results.azure import ingestion
from config.results.azure.ingestion import query_endpoint
from scripts.query.result import QueryFailed, Result, plain


def connect(credential=None) -> LogsQueryClient:
    """One client (and credential, which caches its token) for a session
    of queries."""
    return LogsQueryClient(credential or ingestion.credential(),
                           endpoint=query_endpoint())


def run(client: LogsQueryClient, workspace_id: str, kql: str) -> Result:
    try:
        # No timespan: each query sets its own window (ago(...)).
        response = client.query_workspace(workspace_id, kql, timespan=None)
    except HttpResponseError as err:
        # azure-monitor-query raises a plain HttpResponseError in place of
        # the credential's ClientAuthenticationError (_helpers.process_error)
        if isinstance(err, ClientAuthenticationError) or isinstance(
                err.__context__, ClientAuthenticationError):
            raise QueryFailed(ingestion.NO_CREDENTIAL) from None
        raise QueryFailed(
            f'Log Analytics answered {err.status_code}: {err.message}') \
            from None
    except AzureError as err:
        raise QueryFailed(f'cannot query Log Analytics: {err}') from None
    if response.status == LogsQueryStatus.PARTIAL:
        raise QueryFailed(
            f'Log Analytics returned a partial result: '
            f'{response.partial_error}')
    if not response.tables:
        return Result([], [], [])
    table = response.tables[0]
    types = list(table.columns_types)
    rows = [[plain(row[index], kind) for index, kind in enumerate(types)]
            for row in table.rows]
    return Result(list(table.columns), types, rows)
