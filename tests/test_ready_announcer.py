"""`veil serve`'s ready line (app/serve.py _announce_ready), against a tiny local HTTP server."""

from __future__ import annotations

import http.server
import threading
import time

from app import serve


class _Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200 if self.path == "/readyz" else 404)
        self.end_headers()
        self.wfile.write(b'{"status": "ready"}')

    def log_message(self, *args):
        pass


def test_the_ready_line_does_not_go_through_a_proxy(monkeypatch, capsys):
    """An http_proxy in the environment (common on company machines) sent the local /readyz poll
    to the proxy: 'Veil is not ready after 300 s' while it was. The poll is local: no proxy."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ready)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        for var in ("http_proxy", "HTTP_PROXY"):
            monkeypatch.setenv(var, "http://127.0.0.1:9")  # the discard port: nothing answers
        for var in ("no_proxy", "NO_PROXY"):
            monkeypatch.delenv(var, raising=False)
        serve._announce_ready(f"http://127.0.0.1:{server.server_address[1]}", time.monotonic(), give_up_s=3)
    finally:
        server.shutdown()
        server.server_close()
    assert capsys.readouterr().out.startswith("Veil is ready (")
