"""Loopback stand-ins for the two Azure endpoints the suite talks to, served
over HTTPS on 127.0.0.1 with a throwaway certificate:

- a managed-identity token endpoint, the App Service kind that
  azure-identity finds through IDENTITY_ENDPOINT + IDENTITY_HEADER;
- the Logs Ingestion API: POST {endpoint}/dataCollectionRules/{dcr}/streams/
  {stream}?api-version=2023-01-01 with a bearer token and a JSON array
  (gzip allowed), 204 on success, 413 over 1 MB, 401 without a valid token,
  404 for an unknown rule or stream; a bare object is accepted and dropped,
  as the real service does;
- the Log Analytics query API that azure-monitor-query's LogsQueryClient
  calls: POST {base_url}/v1/workspaces/{workspace_id}/query with a bearer
  token and {"query", "timespan"?}, answered as {"tables": [{"name":
  "PrimaryResult", "columns": [{"name", "type"}], "rows": [[...]]}]} from the
  rows the test's ``answer_query(query, timespan) -> list[dict]`` returns
  (404 for another workspace, 403 when answer_query is unset: no read rights).

Tests can queue failures (status + headers, DROP to close the connection
before accepting anything, or LOST to accept the rows and then close the
connection without the 204: the one way a client sends a row twice), add
give every ingestion call a latency, make tokens expire,
and stop and start the server on the same port (an endpoint that is down).
"""
from __future__ import annotations

import datetime as dt
import gzip
import ipaddress
import json
import random
import secrets
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

MAX_BODY = 1024 * 1024
API_VERSION = '2023-01-01'
DROP = 'drop'   # a queued failure that closes the connection unanswered
LOST = 'lost'   # accepted, then the connection closed before the 204


def make_certificate(directory):
    """A self-signed certificate for 127.0.0.1/localhost; returns paths."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'localhost')])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName('localhost'),
                x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                           critical=True)
            .sign(key, hashes.SHA256()))
    cert_path = directory / 'loopback-cert.pem'
    key_path = directory / 'loopback-key.pem'
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return cert_path, key_path


@dataclass
class Upload:
    path: str
    headers: dict
    body: object          # the decoded JSON
    status: int


@dataclass
class FakeAzure:
    rule_id: str = 'dcr-00000000000000000000000000000001'
    stream: str = 'Custom-ReFrameResults_CL'
    identity_header: str = field(default_factory=lambda: secrets.token_hex(8))
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    uploads: list = field(default_factory=list)      # accepted (204)
    lost: list = field(default_factory=list)         # accepted, 204 lost
    rejected: list = field(default_factory=list)     # anything else
    token_requests: int = 0
    # (status, headers) answered to the next ingestion POSTs, in order;
    # (DROP, {}) closes the connection without an answer, (204, {}) lets
    # the call through
    failures: list = field(default_factory=list)
    base_url: str = ''
    lock: threading.Lock = field(default_factory=threading.Lock)
    # seconds every ingestion call takes: it is answered this long after
    # its request arrived, the endpoint's own work (reading, gunzipping and
    # checking the body) done within them, as a service's latency holds
    # its work
    latency: float = 0.0
    # True (the benchmarks): each body is decompressed as it arrives, 413
    # when its JSON is over 1 MB (the API's limit holds "both compressed and
    # uncompressed"), and held as sent; its JSON is decoded by held_rows()
    # after the timed run, so that decoding 1 MB a call (20 ms of the
    # shared cores) does not slow the client being measured
    hold_bodies: bool = False
    held: list = field(default_factory=list)  # (body, gzipped, when) as sent
    # True: HTTP/1.1, connections kept open between calls as Azure's
    # endpoints keep them (a TLS handshake per call otherwise, on both
    # sides); set before start(). Off for the tests: an endpoint that
    # stop()s must refuse the next call, not answer it on an open connection
    keep_alive: bool = False
    # [(probability, status, headers)]: faults drawn for every call that
    # has no queued failure, from a seeded generator
    random_faults: list = field(default_factory=list)
    rng: random.Random = field(default_factory=lambda: random.Random(8))
    token_lifetime: int = 3600        # seconds a token is accepted
    issued: dict = field(default_factory=dict)    # token -> expiry
    workspace_id: str = '00000000-0000-0000-0000-00000000cafe'
    # answer_query(query: str, timespan: str | None) -> list[dict]
    answer_query: object = None
    queries: list = field(default_factory=list)   # (query, timespan)
    server: object = None
    identity_server: object = None    # the token endpoint: stays up
    identity_url: str = ''

    def draw_fault(self):
        """A (status, headers) drawn from random_faults, or None."""
        with self.lock:
            roll = self.rng.random()
        for probability, status, headers in self.random_faults:
            if roll < probability:
                return status, headers
            roll -= probability
        return None

    def issue_token(self) -> str:
        with self.lock:
            if self.token in self.issued and self.token_lifetime < 3600:
                self.token = secrets.token_urlsafe(24)   # short-lived: new
            self.issued[self.token] = time.time() + self.token_lifetime
            return self.token

    def token_valid(self, token: str) -> bool:
        with self.lock:
            return time.time() < self.issued.get(token, 0)

    @property
    def tokens(self) -> list[str]:
        """Every token handed out, for tests that look for leaks."""
        return list(self.issued) or [self.token]

    def held_rows(self):
        """Each row of the bodies held so far (hold_bodies), decoded now;
        ValueError when a body is no JSON array of objects. Empties the
        hold."""
        with self.lock:
            held, self.held = self.held, []
        for body, gzipped, _ in held:
            rows = json.loads(gzip.decompress(body) if gzipped else body)
            if not (isinstance(rows, list) and
                    all(isinstance(row, dict) for row in rows)):
                raise ValueError('a body that is no JSON array of objects')
            yield from rows

    @property
    def rows(self) -> list[dict]:
        return [row for upload in self.uploads
                if isinstance(upload.body, list) for row in upload.body]

    def env(self) -> dict:
        return {
            'DATA_COLLECTION_ENDPOINT': self.base_url,
            'LOGS_DCR_RULE_ID': self.rule_id,
            'LOGS_DCR_STREAM_NAME': self.stream,
            'IDENTITY_ENDPOINT': f'{self.identity_url}/msi/token',
            'IDENTITY_HEADER': self.identity_header,
            'LOGS_WORKSPACE_ID': self.workspace_id,
            'LOGS_QUERY_ENDPOINT': self.base_url,
        }

    def _serve(self, port: int):
        server = ThreadingHTTPServer(('127.0.0.1', port), _handler_for(self))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f'https://127.0.0.1:{server.server_address[1]}'

    def stop(self):
        """The ingestion and query endpoint goes down: connections are
        refused (the token endpoint stays up, as IMDS would)."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def start(self):
        """Serve (on the same port again after stop())."""
        if self.identity_server is None:
            self.identity_server, self.identity_url = self._serve(0)
        port = int(self.base_url.rsplit(':', 1)[1]) if self.base_url else 0
        self.server, self.base_url = self._serve(port)

    def close(self):
        self.stop()
        if self.identity_server is not None:
            self.identity_server.shutdown()
            self.identity_server.server_close()
            self.identity_server = None


def _handler_for(fake: FakeAzure):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1' if fake.keep_alive else 'HTTP/1.0'
        # An answer is its headers and then its body, two writes: with
        # Nagle's algorithm the body waits for the client's delayed ACK of
        # the headers (40 ms on Linux), which a service does not add.
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def _reply(self, status, body=None, headers=None):
            self._wait_for_latency()
            payload = json.dumps(body).encode() if body is not None else b''
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if payload:
                self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _error(self, status, code, message, headers=None):
            self._reply(status, {'error': {'code': code,
                                           'message': message}}, headers)

        def do_GET(self):
            url = urlparse(self.path)
            if url.path != '/msi/token':
                return self._error(404, 'NotFound', url.path)
            if self.headers.get('X-IDENTITY-HEADER') != fake.identity_header:
                return self._error(401, 'Unauthorized', 'bad identity header')
            query = parse_qs(url.query)
            resource = (query.get('resource') or [''])[0]
            with fake.lock:
                fake.token_requests += 1
            token = fake.issue_token()
            self._reply(200, {
                'access_token': token,
                'expires_on': str(int(time.time()) + fake.token_lifetime),
                'resource': resource,
                'token_type': 'Bearer',
            })

        answer_at = 0.0     # monotonic time an ingestion call is answered

        def _wait_for_latency(self):
            left = self.answer_at - time.monotonic()
            if left > 0:
                time.sleep(left)

        def do_POST(self):
            url = urlparse(self.path)
            self.answer_at = 0.0
            arrived = time.monotonic()
            length = int(self.headers.get('Content-Length') or 0)
            raw = self.rfile.read(length)
            if url.path.startswith('/v1/workspaces/'):
                return self._query(url, raw)
            self.answer_at = arrived + fake.latency
            parts = url.path.strip('/').split('/')
            record = Upload(self.path, dict(self.headers), None, 0)

            def reject(status, code, message, headers=None):
                record.status = status
                with fake.lock:
                    fake.rejected.append(record)
                self._error(status, code, message, headers)

            if (len(parts) != 4 or parts[0] != 'dataCollectionRules'
                    or parts[2] != 'streams'):
                return reject(404, 'NotFound', url.path)
            if parse_qs(url.query).get('api-version') != [API_VERSION]:
                return reject(400, 'InvalidApiVersion', url.query)
            auth = self.headers.get('Authorization', '')
            if not (auth.startswith('Bearer ') and
                    fake.token_valid(auth[len('Bearer '):])):
                return reject(401, 'InvalidToken',
                              'missing, bad or expired token')
            if parts[1] != fake.rule_id:
                return reject(404, 'NotFound', f'no rule {parts[1]}')
            if parts[3] != fake.stream:
                return reject(404, 'InvalidStream', f'no stream {parts[3]}')
            if length > MAX_BODY:
                return reject(413, 'ContentLengthLimitExceeded',
                              'over 1 MB')
            with fake.lock:
                queued = fake.failures.pop(0) if fake.failures else None
            if queued is None:
                queued = fake.draw_fault()
            if queued and queued[0] != 204:     # (204, {}): answer normally
                status, headers = queued
                if status == DROP:
                    self._wait_for_latency()
                    record.status = DROP
                    with fake.lock:
                        fake.rejected.append(record)
                    self.close_connection = True
                    self.connection.close()
                    return
                if status == LOST:
                    self._wait_for_latency()
                    record.body = json.loads(
                        gzip.decompress(raw) if self.headers.get(
                            'Content-Encoding') == 'gzip' else raw)
                    record.status = LOST
                    with fake.lock:
                        fake.uploads.append(record)
                        fake.lost.append(record)
                    self.close_connection = True
                    self.connection.close()
                    return
                return reject(status, 'Injected', 'queued failure', headers)
            sent = raw
            if self.headers.get('Content-Encoding') == 'gzip':
                raw = gzip.decompress(raw)
            if fake.hold_bodies:
                if len(raw) > MAX_BODY:
                    return reject(413, 'ContentLengthLimitExceeded',
                                  'over 1 MB uncompressed')
                record.status = 204
                with fake.lock:
                    fake.uploads.append(record)
                    fake.held.append((sent, raw is not sent,
                                      time.monotonic()))
                return self._reply(204)
            try:
                record.body = json.loads(raw)
            except ValueError:
                return reject(400, 'InvalidJson', 'body is not JSON')
            record.status = 204
            with fake.lock:
                fake.uploads.append(record)
            self._reply(204)

        def _query(self, url, raw):
            parts = url.path.strip('/').split('/')
            auth = self.headers.get('Authorization', '')
            if not (auth.startswith('Bearer ') and
                    fake.token_valid(auth[len('Bearer '):])):
                return self._error(401, 'InvalidToken', 'bad token')
            if parts != ['v1', 'workspaces', fake.workspace_id, 'query']:
                return self._error(404, 'WorkspaceNotFound', url.path)
            if fake.answer_query is None:
                return self._error(403, 'InsufficientAccessError',
                                   'no read access to the workspace')
            try:
                request = json.loads(raw)
                query = request['query']
            except (ValueError, KeyError):
                return self._error(400, 'BadArgumentError', 'no query')
            timespan = request.get('timespan')
            with fake.lock:
                fake.queries.append((query, timespan))
            try:
                rows = fake.answer_query(query, timespan)
            except ValueError as err:
                return self._error(400, 'SemanticError', str(err))
            self._reply(200, {'tables': [query_table(rows)]})

    return Handler


def _kusto_type(values) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return 'string'
    if all(isinstance(v, bool) for v in present):
        return 'bool'
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return 'long'
    if all(isinstance(v, (int, float)) and not isinstance(v, bool)
           for v in present):
        return 'real'
    if all(isinstance(v, (list, dict)) for v in present):
        return 'dynamic'
    if all(isinstance(v, str) and _is_datetime(v) for v in present):
        return 'datetime'
    return 'string'


def _is_datetime(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        return False
    return 'T' in text


def query_table(rows: list[dict]) -> dict:
    """Rows as Log Analytics' PrimaryResult table: columns typed from the
    values, dynamic values as JSON text (as the service sends them)."""
    names = list(rows[0]) if rows else []
    types = [_kusto_type([row.get(n) for row in rows]) for n in names]
    table_rows = [[json.dumps(row.get(n)) if kind == 'dynamic' and
                   row.get(n) is not None else row.get(n)
                   for n, kind in zip(names, types)] for row in rows]
    return {'name': 'PrimaryResult',
            'columns': [{'name': n, 'type': t} for n, t in zip(names, types)],
            'rows': table_rows}


@pytest.fixture
def fake_azure(tmp_path, monkeypatch):
    """A running loopback Azure; its CA is trusted through the standard
    variables (REQUESTS_CA_BUNDLE, SSL_CERT_FILE)."""
    cert, key = make_certificate(tmp_path)
    fake = FakeAzure()
    fake.cert, fake.key = cert, key
    fake.start()
    fake.ca_bundle = str(cert)
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', str(cert))
    monkeypatch.setenv('SSL_CERT_FILE', str(cert))
    try:
        yield fake
    finally:
        fake.close()
