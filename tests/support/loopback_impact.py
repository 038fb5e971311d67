"""A loopback stand-in of Azure's Impact Reporting API as Guest Health
Reporting documents it, over HTTPS on 127.0.0.1 with a throwaway
certificate, and of the managed-identity token endpoint azure-identity
finds through IDENTITY_ENDPOINT + IDENTITY_HEADER (App Service kind).

What it checks, from the docs (learn.microsoft.com/azure/
azure-impact-reporting/guest-health-impact-report and .../
guest-health-impact-categories):
- PUT /subscriptions/{sub}/providers/Microsoft.Impact/workloadImpacts/
  {name}?api-version=... with a bearer token issued for the management
  resource (https://management.azure.com); 401 otherwise;
- the subscription onboarded and the caller holding the "Azure Impact
  Reporter" role (overview page); 403 otherwise, as ARM answers
  AuthorizationFailed;
- the body: properties.startDateTime (a UTC time), impactCategory from the
  documented table (case-sensitive), impactDescription, impactedResourceId
  (a VM's ARM id), additionalProperties.PhysicalHostName (spelled so);
  400 otherwise, naming the field;
- a name used once: a second PUT of it is 409 Conflict (one impact per
  name, whatever the retries);
- GET .../workloadImpacts/{name}/insights?api-version=... answers the
  insights a test set for that impact ({"value": [...]}).

Every request is recorded (method, path, api-version, body, status, the
token's resource). A test queues answers: a status (429 with Retry-After,
500, 503), LOST (the impact is stored, then the connection closes with no
answer) or DROP (closed before anything is stored).
"""
from __future__ import annotations

import datetime as dt
import json
import re
import secrets
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support.loopback_azure import make_certificate

MANAGEMENT = 'https://management.azure.com'
DROP, LOST = 'drop', 'lost'
API_VERSIONS = ('2023-02-01-preview', '2025-01-01-preview')
# The categories table of guest-health-impact-categories, as written there
CATEGORIES = ['Resource.Hpc.Reset', 'Resource.Hpc.Reboot'] + [
    'Resource.Hpc.Unhealthy.' + name for name in (
        'HpcMissingGpu', 'MissingIB', 'IBPerformance', 'IBPortDown',
        'IBPortFlapping', 'HpcGpuDcgmDiagFailure', 'HpcRowRemapFailure',
        'HpcInforomCorruption', 'HpcGenericFailure', 'ManualInvestigation',
        'XID95UncontainedECCError', 'XID94ContainedECCError',
        'XID79FallenOffBus', 'XID48DoubleBitECC', 'UnhealthyGPUNvidiasmi',
        'NvLink', 'HpcDcgmiThermalReport', 'ECCPageRetirementTableFull',
        'DBEOverLimit', 'GpuXIDError', 'AmdGpuResetFailed', 'EROTFailure',
        'GPUMemoryBWFailure', 'CPUPerformance')]
_VM_ID = re.compile(r'/subscriptions/[^/]+/resourceGroups/[^/]+/providers/'
                    r'Microsoft\.Compute/virtualMachines/[^/]+')
_PATH = re.compile(r'/subscriptions/([^/]+)/providers/Microsoft\.Impact/'
                   r'workloadImpacts/([^/]+)(/insights)?')


@dataclass
class Request:
    method: str
    path: str
    api_version: str | None
    body: object
    status: object
    token_resource: str | None


@dataclass
class FakeImpactApi:
    onboarded: set = field(default_factory=set)   # subscriptions
    role_granted: bool = True
    categories: list = field(default_factory=lambda: list(CATEGORIES))
    identity_header: str = field(default_factory=lambda: secrets.token_hex(8))
    tokens: dict = field(default_factory=dict)     # token -> resource
    token_resources: list = field(default_factory=list)
    requests: list = field(default_factory=list)
    impacts: dict = field(default_factory=dict)    # name -> stored body
    insights: dict = field(default_factory=dict)   # name -> [insight]
    answers: list = field(default_factory=list)    # queued: status/LOST/DROP
    lock: threading.Lock = field(default_factory=threading.Lock)
    base_url: str = ''
    server: object = None

    def env(self) -> dict:
        return {'CLUSTERPROOF_ARM_ENDPOINT': self.base_url,
                'IDENTITY_ENDPOINT': f'{self.base_url}/msi/token',
                'IDENTITY_HEADER': self.identity_header,
                'CLUSTERPROOF_GHR_BACKOFF_S': '0.05'}

    @property
    def puts(self) -> list[Request]:
        return [r for r in self.requests if r.method == 'PUT']

    def start(self, cert, key):
        server = ThreadingHTTPServer(('127.0.0.1', 0), _handler(self))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.server = server
        self.base_url = f'https://127.0.0.1:{server.server_address[1]}'

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _problem(body) -> str | None:
    """What the documented body lacks, or None."""
    props = body.get('properties') if isinstance(body, dict) else None
    if not isinstance(props, dict):
        return 'properties: missing'
    for name in ('startDateTime', 'impactCategory', 'impactDescription',
                 'impactedResourceId'):
        if not isinstance(props.get(name), str) or not props[name].strip():
            return f'properties.{name}: missing'
    try:
        dt.datetime.fromisoformat(props['startDateTime'].replace('Z',
                                                                 '+00:00'))
    except ValueError:
        return 'properties.startDateTime: not a date-time'
    if not _VM_ID.fullmatch(props['impactedResourceId']):
        return 'properties.impactedResourceId: not a VM resource id'
    extra = props.get('additionalProperties')
    if not isinstance(extra, dict) or not isinstance(
            extra.get('PhysicalHostName'), str) or \
            not extra['PhysicalHostName'].isalnum():
        return 'properties.additionalProperties.PhysicalHostName: missing'
    return None


def _handler(fake: FakeImpactApi):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, status, body=None, headers=None):
            payload = json.dumps(body).encode() if body is not None else b''
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _error(self, record, status, code, message, headers=None):
            record.status = status
            self._reply(status, {'error': {'code': code,
                                           'message': message}}, headers)

        def _token(self):
            url = urlparse(self.path)
            if self.headers.get('X-IDENTITY-HEADER') != fake.identity_header:
                return self._reply(401, {'error': 'bad identity header'})
            resource = (parse_qs(url.query).get('resource') or [''])[0]
            token = secrets.token_urlsafe(24)
            with fake.lock:
                fake.tokens[token] = resource
                fake.token_resources.append(resource)
            self._reply(200, {'access_token': token, 'token_type': 'Bearer',
                              'expires_on': str(int(time.time()) + 3600),
                              'resource': resource})

        def _start(self, method):
            url = urlparse(self.path)
            length = int(self.headers.get('Content-Length') or 0)
            raw = self.rfile.read(length) if length else b''
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors='replace')
            auth = self.headers.get('Authorization', '')
            resource = fake.tokens.get(auth[len('Bearer '):]) \
                if auth.startswith('Bearer ') else None
            record = Request(method, url.path, (parse_qs(url.query).get(
                'api-version') or [None])[0], body, None, resource)
            with fake.lock:
                fake.requests.append(record)
            return url, record

        def _checked(self, url, record):
            """The path's (subscription, name, insights) once the
            request may go on; None after answering an error."""
            match = _PATH.fullmatch(url.path)
            if not match:
                return self._error(record, 404, 'NotFound', url.path)
            if record.api_version not in API_VERSIONS:
                return self._error(record, 400, 'InvalidApiVersion',
                                   str(record.api_version))
            if record.token_resource is None or \
                    record.token_resource.rstrip('/') != MANAGEMENT:
                return self._error(record, 401, 'InvalidAuthenticationToken',
                                   'no token for the management resource')
            if match.group(1) not in fake.onboarded or \
                    not fake.role_granted:
                return self._error(record, 403, 'AuthorizationFailed',
                                   'the client has no authorization to '
                                   'perform Microsoft.Impact/workloadImpacts'
                                   '/write over this scope')
            return match.group(1), match.group(2), bool(match.group(3))

        def do_GET(self):
            if urlparse(self.path).path == '/msi/token':
                return self._token()
            url, record = self._start('GET')
            checked = self._checked(url, record)
            if checked is None:
                return
            _, name, insights = checked
            if not insights or name not in fake.impacts:
                return self._error(record, 404, 'NotFound', name)
            record.status = 200
            self._reply(200, {'value': fake.insights.get(name, [])})

        def do_PUT(self):
            url, record = self._start('PUT')
            checked = self._checked(url, record)
            if checked is None:
                return
            _, name, insights = checked
            if insights:
                return self._error(record, 405, 'MethodNotAllowed', 'PUT')
            problem = _problem(record.body)
            if problem:
                return self._error(record, 400, 'InvalidRequestContent',
                                   problem)
            category = record.body['properties']['impactCategory']
            if category not in fake.categories:
                return self._error(record, 400, 'InvalidImpactCategory',
                                   f'{category} is not an allowed category')
            with fake.lock:
                queued = fake.answers.pop(0) if fake.answers else None
                if queued in (DROP, None, LOST) and name in fake.impacts:
                    queued = 'conflict'
                if queued in (None, LOST):
                    fake.impacts[name] = record.body
            if queued == 'conflict':
                return self._error(record, 409, 'Conflict',
                                   f'workload impact {name} exists')
            if queued in (DROP, LOST):
                record.status = queued
                self.close_connection = True
                self.connection.close()
                return
            if queued is not None:
                return self._error(record, queued, 'Injected',
                                   'queued answer', {'Retry-After': '0'}
                                   if queued == 429 else None)
            record.status = 200
            self._reply(200, {'name': name, 'properties': {
                **record.body['properties'], 'provisioningState':
                'Succeeded'}})

    return Handler


@pytest.fixture
def impact_api(tmp_path, monkeypatch):
    """A running stand-in; its CA trusted through REQUESTS_CA_BUNDLE, its
    URLs in the environment."""
    cert, key = make_certificate(tmp_path)
    fake = FakeImpactApi()
    fake.start(cert, key)
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', str(cert))
    monkeypatch.setenv('SSL_CERT_FILE', str(cert))
    for name, value in fake.env().items():
        monkeypatch.setenv(name, value)
    fake.ca_bundle = str(cert)
    try:
        yield fake
    finally:
        fake.close()


SUB = '11111111-2222-3333-4444-555555555555'


def vm_id(node):
    return (f'/subscriptions/{SUB}/resourceGroups/rg-hpc/providers/'
            f'Microsoft.Compute/virtualMachines/{node}')


def kvp_pool(pairs):
    """A Hyper-V KVP pool file: 512-byte keys, 2048-byte values."""
    return b''.join(key.encode().ljust(512, b'\0') +
                    value.encode().ljust(2048, b'\0')
                    for key, value in pairs)
