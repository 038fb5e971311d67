"""The Azure Impact Reporting API as Guest Health Reporting uses it.

PUT {arm}/subscriptions/{sub}/providers/Microsoft.Impact/workloadImpacts/
{name}?api-version=... files a report; GET .../{name}/insights?api-version=
... lists what Azure did with it (REPORT_DOC). Tokens come from
azure-identity's DefaultAzureCredential for the management scope. A 429,
a 5xx or a lost connection is retried with backoff (Retry-After honoured);
a 4xx is answered at once, with what to change (outcome())."""
from __future__ import annotations

import time
from dataclasses import dataclass

from config.results import settings

from .categories import REPORT_DOC

# The report's PUT example names 2023-02-01-preview, its insights example
# 2025-01-01-preview (REPORT_DOC); CLUSTERPROOF_IMPACT_API_VERSION sets both
PUT_API_VERSION = '2023-02-01-preview'
INSIGHTS_API_VERSION = '2025-01-01-preview'
ATTEMPTS = 4
TIMEOUT_S = 30
OVERVIEW_DOC = ('https://learn.microsoft.com/azure/azure-impact-reporting/'
                'guest-health-overview')

FILED, ALREADY_FILED, REFUSED, FAILED = ('filed', 'already_filed',
                                         'refused', 'failed')


@dataclass
class Answer:
    status: int | None      # None: no answer (connection lost)
    body: object = None
    attempts: int = 1
    error: str = ''

    def as_dict(self) -> dict:
        return {'status': self.status, 'body': self.body,
                'attempts': self.attempts, 'error': self.error}


def endpoint() -> str:
    return settings.arm_endpoint()


def scope() -> str:
    return settings.arm_scope()


def api_version(default: str) -> str:
    return settings.impact_api_version(default)


def impact_url(subscription: str, name: str) -> str:
    return (f'{endpoint()}/subscriptions/{subscription}/providers/'
            f'Microsoft.Impact/workloadImpacts/{name}'
            f'?api-version={api_version(PUT_API_VERSION)}')


def insights_url(subscription: str, name: str) -> str:
    return (f'{endpoint()}/subscriptions/{subscription}/providers/'
            f'Microsoft.Impact/workloadImpacts/{name}/insights'
            f'?api-version={api_version(INSIGHTS_API_VERSION)}')


_credential = None


def _token() -> str:
    global _credential
    if _credential is None:
        from azure.identity import DefaultAzureCredential
        _credential = DefaultAzureCredential()
    return _credential.get_token(scope()).token


def _backoff(attempt: int, retry_after: str | None) -> float:
    base = settings.ghr_backoff()
    try:
        asked = float(retry_after) if retry_after else None
    except ValueError:
        asked = None
    return min(asked, 60.0) if asked is not None and asked >= 0 \
        else base * 2 ** attempt


def call(method: str, url: str, body: dict | None = None) -> Answer:
    """One request, retried while the answer is transient."""
    import requests
    try:
        token = _token()
    except Exception as error:   # azure-identity's errors are many
        return Answer(None, attempts=0, error=(
            f'no Azure token for {scope()} ({type(error).__name__}: '
            f'{" ".join(str(error).split())[:200]})'))
    answer = Answer(None)
    for attempt in range(ATTEMPTS):
        answer.attempts = attempt + 1
        retry_after = None
        try:
            response = requests.request(
                method, url, json=body, timeout=TIMEOUT_S,
                headers={'Authorization': f'Bearer {token}'})
        except requests.RequestException as error:
            answer.status, answer.error = None, type(error).__name__
        else:
            try:
                parsed = response.json()
            except ValueError:
                parsed = response.text[:500] or None
            answer.status, answer.body, answer.error = \
                response.status_code, parsed, ''
            if response.status_code < 500 and response.status_code != 429:
                return answer
            retry_after = response.headers.get('Retry-After')
        if attempt + 1 < ATTEMPTS:
            time.sleep(_backoff(attempt, retry_after))
    return answer


def _message(body) -> str:
    if isinstance(body, dict) and isinstance(body.get('error'), dict):
        error = body['error']
        return f"{error.get('code', '')}: {error.get('message', '')}".strip()
    return str(body or '')[:300]


def outcome(answer: Answer) -> tuple[str, str]:
    """(filed|already_filed|refused|failed, what it means and what to do)."""
    status, said = answer.status, _message(answer.body)
    if status in (200, 201):
        return FILED, f'Azure accepted the report (HTTP {status})'
    if status == 409:
        return ALREADY_FILED, ('a report of this name exists already '
                               f'(HTTP 409): it was filed before ({said})')
    if status in (401, 403):
        return REFUSED, (
            f'HTTP {status} {said}: the subscription is not onboarded '
            '(register the Microsoft.Impact resource provider and ask for '
            'the allow list) or the identity lacks the "Azure Impact '
            f'Reporter" role (bicep: grantImpactReporter=true); '
            f'{OVERVIEW_DOC}')
    if status == 400:
        return REFUSED, (f'HTTP 400 {said}: Azure refused the request (a '
                         'category or field it does not accept); '
                         f'{REPORT_DOC}')
    if status == 404:
        return REFUSED, (f'HTTP 404 {said}: no such subscription or '
                         'provider (is Microsoft.Impact registered?)')
    if status is None and answer.attempts == 0:
        return REFUSED, (f'{answer.error}: DefaultAzureCredential found no '
                         'identity (the managed identity of the node, `az '
                         'login`, or the service principal variables)')
    if status is None:
        return FAILED, (f'no answer after {answer.attempts} attempt(s): '
                        f'{answer.error}; the next run tries again')
    return FAILED, (f'HTTP {status} {said} after {answer.attempts} '
                    'attempt(s); the next run tries again')
