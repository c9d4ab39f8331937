"""A scripted OpenAI-compatible HTTP/1.1 server on a free loopback port, for the model tests.

Written on raw ``asyncio`` streams so a test controls every byte: when each SSE chunk is sent
(an ``asyncio.Event`` in the script holds the rest back), whether the body is cut, and whether
the client hung up. Each connection serves one request (``Connection: close``); the handlers
queued in ``server.script`` answer the requests in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

__all__ = [
    "CUT",
    "DONE",
    "AwaitDisconnect",
    "FakeServer",
    "Recorded",
    "chunk",
    "completion",
    "drop_connection",
    "json_reply",
    "sse_reply",
]


@dataclass
class Recorded:
    """One request as the server saw it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


Handler = Callable[[Recorded, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class FakeServer:
    """The server; ``async with FakeServer() as server`` listens on 127.0.0.1, port chosen by
    the OS."""

    script: list[Handler] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await self._server.wait_closed()

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            request = await _read_request(reader)
            self.requests.append(request)
            handler = self.script.pop(0) if self.script else json_reply(404, {"error": "none"})
            await handler(request, reader, writer)
            if not writer.is_closing():
                writer.close()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)


async def _read_request(reader: asyncio.StreamReader) -> Recorded:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Recorded(method, path, headers, json.loads(body) if body else {})


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Handler:
    """Answer with a complete JSON (or, for a ``str`` payload, plain text) response."""

    async def handler(
        request: Recorded, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        body = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        writer.write(
            _head(
                status,
                {
                    "Content-Type": "application/json",
                    "Content-Length": str(len(body)),
                    "Connection": "close",
                    **(headers or {}),
                },
            )
            + body
        )
        await writer.drain()

    return handler


def drop_connection() -> Handler:
    """Read the request, then hang up without answering."""

    async def handler(
        request: Recorded, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        writer.transport.abort()

    return handler


class AwaitDisconnect:
    """Script step: wait until the client closes its end, then set ``server.disconnected``."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server


#: Script step: abort the connection without ending the chunked body.
CUT = object()
#: The terminating SSE event.
DONE = "data: [DONE]\n\n"

Step = str | bytes | asyncio.Event | AwaitDisconnect | object


def sse_reply(steps: Sequence[Step], *, chunked: bool = True) -> Handler:
    """Stream ``steps``: ``str``/``bytes`` are sent as they are (one chunk each), an
    ``asyncio.Event`` is waited for, :class:`AwaitDisconnect` waits for the client to hang up,
    :data:`CUT` aborts the connection. With ``chunked=False`` the body is delimited by closing
    the connection, so the end of the script is a clean end of the body.
    """

    async def handler(
        request: Recorded, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        headers = {"Content-Type": "text/event-stream", "Connection": "close"}
        if chunked:
            headers["Transfer-Encoding"] = "chunked"
        writer.write(_head(200, headers))
        await writer.drain()
        for step in steps:
            if isinstance(step, asyncio.Event):
                await step.wait()
            elif isinstance(step, AwaitDisconnect):
                with contextlib.suppress(ConnectionError):
                    while await reader.read(1024):
                        pass
                step.server.disconnected.set()
                return
            elif step is CUT:
                writer.transport.abort()
                return
            elif isinstance(step, str | bytes):
                data = step.encode() if isinstance(step, str) else step
                writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n" if chunked else data)
                await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    return handler


def chunk(content: str | None = None, *, role: str | None = None, finish: str | None = None) -> str:
    """One ``chat.completion.chunk`` SSE event."""
    delta: dict[str, Any] = {}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    payload = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def completion(content: str | None) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` body."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
