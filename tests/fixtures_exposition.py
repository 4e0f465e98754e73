"""A real HTTP server answering ``/metrics`` with a fixed text exposition, as the JMX exporter agent does: for
tests of what ``top`` and the exporter readers make of a given scrape without starting a broker."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def served_exposition(text: str) -> Iterator[str]:
    """Serve ``text`` on ``http://127.0.0.1:PORT/metrics`` (404 elsewhere); yields ``127.0.0.1:PORT``."""
    body = text.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/metrics"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            if found:
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


#: One quota-id whose client-id needs JMX quoting, and a series that is not a quota sensor.
QUOTED_CLIENT_EXPOSITION = """# HELP kafka_quota_byte_rate Tracking byte-rate per user/client-id
# TYPE kafka_quota_byte_rate gauge
kafka_quota_byte_rate{client_id="a \\"b\\"",quota_type="Produce",} 2500.0
# TYPE kafka_quota_throttle_time gauge
kafka_quota_throttle_time{client_id="a \\"b\\"",quota_type="Produce",} 250.0
# TYPE jvm_threads_current gauge
jvm_threads_current 42.0
"""


@pytest.fixture
def exporter() -> Iterator[str]:
    """A real HTTP server serving an exporter's text exposition (what the agent answers on /metrics)."""
    with served_exposition(QUOTED_CLIENT_EXPOSITION) as address:
        yield address
