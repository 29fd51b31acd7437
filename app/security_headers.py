"""Response headers that keep a browser or a cache from mishandling what the API answers
(OWASP's REST Security Cheat Sheet, "Security headers"):

- ``X-Content-Type-Options: nosniff`` on every answer: a CSV or JSON Lines download holds
  uploaded text, which a browser must not sniff into HTML or script.
- under ``/v1/``: ``Cache-Control: no-store`` (raw data, releases, keys, budgets and audit
  events must not stay in a browser's or a proxy's cache; an answer that sets its own
  Cache-Control keeps it), and ``Content-Security-Policy: default-src 'none';
  frame-ancestors 'none'`` (nothing an answer holds — an SVG plot opened on its own included —
  may run script, load anything or be framed). The interactive docs (/docs, /redoc) load
  their scripts and are left alone.
"""

from __future__ import annotations

_EVERYWHERE = [(b"x-content-type-options", b"nosniff")]
_API = [(b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'")]
_NO_STORE = (b"cache-control", b"no-store")


class SecurityHeaders:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        api = scope["path"].startswith("/v1/") or scope["path"] == "/v1"

        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers += [h for h in _EVERYWHERE if h[0] not in names]
                if api:
                    headers += [h for h in (*_API, _NO_STORE) if h[0] not in names]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
