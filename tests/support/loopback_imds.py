"""A loopback stand-in of the Azure Instance Metadata Service's
``compute/vmSize`` and ``compute`` document (learn.microsoft.com/azure/
virtual-machines/instance-metadata-service): on 127.0.0.1 only, and like
the real service it answers only requests with the ``Metadata: true``
header (400 otherwise).
All sandbox nodes live on this host, so the path starts with the node's name
(the job's ``%n``): ``/<node>/metadata/instance/compute/vmSize``.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

VM_SIZE_PATH = '/metadata/instance/compute/vmSize'
COMPUTE_PATH = '/metadata/instance/compute'


class LoopbackImds:
    def __init__(self, sizes: dict[str, str],
                 computes: dict[str, dict] | None = None):
        self.sizes = dict(sizes)
        # node -> its compute document (resourceId, vmId, subscriptionId...)
        self.computes = dict(computes or {})
        self.requests: list[dict] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                url = urlsplit(self.path)
                node, _, rest = url.path.lstrip('/').partition('/')
                query = parse_qs(url.query)
                stand_in.requests.append({
                    'node': node, 'path': '/' + rest, 'query': query,
                    'metadata': self.headers.get('Metadata')})
                if self.headers.get('Metadata') != 'true':
                    return self._answer(400, 'Bad request. Required metadata '
                                        'header not specified')
                if '/' + rest == COMPUTE_PATH:
                    if (query.get('format') != ['json'] or 'api-version'
                            not in query or node not in stand_in.computes):
                        return self._answer(404, 'Not found')
                    return self._answer(200, json.dumps(
                        stand_in.computes[node]))
                if ('/' + rest != VM_SIZE_PATH or query.get('format') !=
                        ['text'] or 'api-version' not in query
                        or node not in stand_in.sizes):
                    return self._answer(404, 'Not found')
                return self._answer(200, stand_in.sizes[node])

            def _answer(self, status, text):
                body = text.encode()
                self.send_response(status)
                self.send_header('Content-Type', 'text/plain; charset=utf-8')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)

    @property
    def url(self) -> str:
        """The job's metadata URL: %n is the node's Slurm name."""
        port = self.server.server_address[1]
        return (f'http://127.0.0.1:{port}/%n{VM_SIZE_PATH}'
                '?api-version=2021-02-01&format=text')

    def compute_url(self) -> str:
        """The compute document's URL, %n for the node's name."""
        port = self.server.server_address[1]
        return (f'http://127.0.0.1:{port}/%n{COMPUTE_PATH}'
                '?api-version=2021-02-01&format=json')

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
