"""A tiny OpenAI-compatible chat server on a free loopback port, for driving real clients.

It answers ``POST /v1/chat/completions`` with ``"echo: " + the last user message``, streamed as
SSE chunks of a few characters. A message containing ``SLOW`` gets its first chunk
(``"partial answer "``) and is then held open until :attr:`FakeOpenAI.release` is set or the
client goes away; :attr:`holding` says it is holding, :attr:`disconnected` that the client
closed the stream (found by writing an SSE comment every 20 ms).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAI"]

SLOW_MARK = "SLOW"
PARTIAL = "partial answer "


class FakeOpenAI:
    """Start with :meth:`start`, stop with :meth:`stop` (or use it as a context manager)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.release = threading.Event()
        self.holding = threading.Event()
        self.disconnected = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(body)
                fake.authorizations.append(self.headers.get("Authorization"))
                if self.path != "/v1/chat/completions":
                    self.send_error(404)
                    return
                users = [m["content"] for m in body.get("messages", []) if m["role"] == "user"]
                last = users[-1] if users else ""
                reply = f"echo: {last}"
                if not body.get("stream"):
                    payload = {"choices": [{"message": {"role": "assistant", "content": reply}}]}
                    data = json.dumps(payload).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                try:
                    if SLOW_MARK in last:
                        self._chunk(PARTIAL)
                        fake.holding.set()
                        while not fake.release.wait(0.02):
                            self.wfile.write(b": waiting\n\n")
                            self.wfile.flush()
                    for start in range(0, len(reply), 5):
                        self._chunk(reply[start : start + 5])
                    self._chunk(None)
                except OSError:
                    fake.disconnected.set()

            def _chunk(self, text: str | None) -> None:
                if text is None:
                    self.wfile.write(b"data: [DONE]\n\n")
                else:
                    delta = {"choices": [{"index": 0, "delta": {"content": text}}]}
                    self.wfile.write(b"data: " + json.dumps(delta).encode() + b"\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
