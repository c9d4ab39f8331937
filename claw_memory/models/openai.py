"""A client for any OpenAI-compatible ``/v1/chat/completions`` server, with real SSE streaming.

Works with OpenAI, Ollama, vLLM, llama.cpp and the like. Transient failures (429, 500, 502, 503,
504, connection errors) are retried with exponential backoff and jitter, but only before the
first token: once text has reached the caller a retry would repeat it, so a failure after that
point raises. Every failure is a :class:`~claw_memory.errors.ModelError` carrying the HTTP status
when there was one; no message ever contains the API key or URL credentials.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from claw_memory._closing import AsyncClosing
from claw_memory.errors import ModelError
from claw_memory.models.base import ChatMessage
from claw_memory.models.sse import SSEDecoder

__all__ = ["RETRY_STATUSES", "OpenAICompatibleModel"]

#: HTTP statuses worth retrying: rate limiting and transient server or gateway failures.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

_DETAIL_CHARS = 300


@dataclass(frozen=True, slots=True)
class _Failure:
    """One failed attempt: the error to raise if no retry is left, and the server's advice."""

    error: ModelError
    cause: BaseException | None = None
    retry_after: float | None = None


class OpenAICompatibleModel(AsyncClosing):
    """Chat completions over HTTP, whole (``complete``) or streamed (``stream``).

    ``base_url`` is written as OpenAI writes it, ending in ``/v1``
    (``http://127.0.0.1:11434/v1`` for Ollama). The ``Authorization: Bearer`` header is sent
    only when ``api_key`` is set. ``extra_body`` is merged into every request body
    (``{"temperature": 0}``). ``backoff`` is the first retry delay in seconds, doubled per
    retry up to ``max_backoff``; a ``Retry-After`` header wins, capped at ``max_retry_after``.

    The model owns its HTTP client and closes it in :meth:`aclose` (or ``async with``), unless
    ``client`` was passed in: a shared client stays the caller's to close.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        client: httpx.AsyncClient | None = None,
        extra_body: Mapping[str, Any] | None = None,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 30.0,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL ending in /v1")
        if not model:
            raise ValueError("model must be a non-empty model name")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.name = model
        self.model = model
        self.base_url = base_url.rstrip("/")
        try:
            base = httpx.URL(self.base_url)
        except httpx.InvalidURL as exc:
            raise ValueError(f"base_url is not a valid URL: {exc}") from None
        self._url = base.copy_with(path=base.path.rstrip("/") + "/chat/completions")
        # Shown in messages: no credentials, no query string.
        host = f"[{base.host}]" if ":" in base.host else base.host
        port = f":{base.port}" if base.port else ""
        self._shown_url = f"{base.scheme}://{host}{port}{self._url.path}"
        self._api_key = api_key or None
        self._timeout = httpx.Timeout(timeout)
        self._max_retries = max_retries
        self._extra_body = dict(extra_body or {})
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._max_retry_after = max_retry_after
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(timeout=self._timeout)
        self._closed = False

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel(url={self._shown_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        """Close the HTTP client if this model created it. Idempotent."""
        self._closed = True
        if self._owns_client:
            await self._client.aclose()

    # --- the Model protocol --------------------------------------------------------------------

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The whole reply: ``choices[0].message.content`` ("" when the server sent none)."""
        body = self._body(messages, stream=False)
        attempt = 0
        while True:
            outcome = await self._send(body, stream=False)
            if isinstance(outcome, httpx.Response):
                return self._content(outcome)
            await self._retry_or_raise(outcome, attempt)
            attempt += 1

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncGenerator[str, None]:
        """The reply as text deltas, yielded as the server sends them.

        Breaking out early (or ``aclose()``) closes the HTTP response at once, which tells the
        server to stop generating.
        """
        body = self._body(messages, stream=True)
        attempt = 0
        while True:
            outcome = await self._send(body, stream=True)
            if isinstance(outcome, httpx.Response):
                response = outcome
                yielded = False
                try:
                    if response.headers.get("content-type", "").startswith("application/json"):
                        # A server that ignored "stream": true and answered in one piece.
                        await response.aread()
                        if text := self._content(response):
                            yield text
                        return
                    reply = _ReplyReader(self)
                    async for raw in response.aiter_bytes():
                        for event in reply.feed(raw):
                            if delta := reply.delta(event):
                                yielded = True
                                yield delta
                            if reply.done:
                                return
                    for event in reply.end():
                        if delta := reply.delta(event):
                            yielded = True
                            yield delta
                    reply.check_complete()
                    return
                except httpx.HTTPError as exc:
                    if yielded:
                        raise ModelError(
                            f"the stream from {self._shown_url} was cut after it started "
                            f"({type(exc).__name__})",
                            retryable=True,
                        ) from exc
                    outcome = self._transport_failure(exc)
                except ModelError as exc:
                    if yielded:
                        raise
                    outcome = _Failure(exc, exc.__cause__)
                finally:
                    await response.aclose()
            await self._retry_or_raise(outcome, attempt)
            attempt += 1

    # --- requests ------------------------------------------------------------------------------

    def _body(self, messages: Sequence[ChatMessage], *, stream: bool) -> dict[str, Any]:
        return {
            **self._extra_body,
            "model": self.model,
            "messages": [dict(message) for message in messages],
            "stream": stream,
        }

    def _headers(self, *, stream: bool) -> dict[str, str]:
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _send(self, body: dict[str, Any], *, stream: bool) -> httpx.Response | _Failure:
        """One request: a successful response (still open when streaming) or why it failed."""
        if self._closed or self._client.is_closed:
            return _Failure(ModelError(f"model {self.model!r} is closed"))
        request = self._client.build_request(
            "POST",
            self._url,
            json=body,
            headers=self._headers(stream=stream),
            timeout=self._timeout,
        )
        try:
            response = await self._client.send(request, stream=stream)
        except httpx.HTTPError as exc:
            return self._transport_failure(exc)
        if response.is_success:
            return response
        try:
            await response.aread()
            detail = self._detail(response.text)
        except httpx.HTTPError:
            detail = ""
        finally:
            await response.aclose()
        status = response.status_code
        message = f"model server {self._shown_url} answered HTTP {status}"
        return _Failure(
            ModelError(
                f"{message}: {detail}" if detail else message,
                status=status,
                retryable=status in RETRY_STATUSES,
            ),
            retry_after=_retry_after(response.headers.get("retry-after")),
        )

    def _transport_failure(self, exc: httpx.HTTPError) -> _Failure:
        kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
        detail = self._scrub(str(exc))
        message = f"request to model server {self._shown_url} {kind} ({type(exc).__name__})"
        return _Failure(
            ModelError(
                f"{message}: {detail}" if detail else message,
                retryable=isinstance(exc, httpx.TransportError),
            ),
            cause=exc,
        )

    async def _retry_or_raise(self, failure: _Failure, attempt: int) -> None:
        """Sleep before the next attempt, or raise the failure when it is final."""
        if not failure.error.retryable or attempt >= self._max_retries:
            raise failure.error from failure.cause
        if failure.retry_after is not None:
            delay = min(failure.retry_after, self._max_retry_after)
        else:
            step = min(self._max_backoff, self._backoff * 2**attempt)
            delay = step / 2 + random.uniform(0, step / 2)
        await asyncio.sleep(delay)

    # --- replies -------------------------------------------------------------------------------

    def _content(self, response: httpx.Response) -> str:
        try:
            payload = response.json()
        except ValueError as exc:
            raise ModelError(
                f"model server {self._shown_url} sent a reply that is not JSON"
            ) from exc
        self._raise_if_error(payload, response.status_code)
        try:
            content = payload["choices"][0]["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"model server {self._shown_url} sent a reply without choices[0].message"
            ) from exc
        if content is None:
            return ""
        if not isinstance(content, str):
            raise ModelError(f"model server {self._shown_url} sent non-text message content")
        return content

    def _raise_if_error(self, payload: Any, status: int | None) -> None:
        """Raise the error an OpenAI-style ``{"error": ...}`` body describes, if it is one."""
        if not isinstance(payload, dict) or not payload.get("error"):
            return
        error = payload["error"]
        message = error.get("message") if isinstance(error, dict) else error
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(code, int) and not isinstance(code, bool):
            status = code
        detail = self._detail(message if isinstance(message, str) else json.dumps(message))
        raise ModelError(
            f"model server {self._shown_url} reported an error: {detail}",
            status=status,
            retryable=status in RETRY_STATUSES,
        )

    def _detail(self, text: str) -> str:
        """A short excerpt of a server's error body, for the message."""
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            error = payload.get("error", payload)
            message = error.get("message") if isinstance(error, dict) else error
            if isinstance(message, str):
                text = message
        text = " ".join(text.split())
        if len(text) > _DETAIL_CHARS:
            text = text[: _DETAIL_CHARS - 3] + "..."
        return self._scrub(text)

    def _scrub(self, text: str) -> str:
        # Servers echo rejected keys in their error messages; never pass one on.
        if self._api_key:
            text = text.replace(self._api_key, "[redacted]")
        return text


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


class _ReplyReader:
    """Turns a streamed ``chat.completion.chunk`` body into text deltas.

    The reply is complete at ``[DONE]``, or when the body ends after a choice reported a
    finish reason (some servers omit ``[DONE]``). A body that ends before either was cut: that
    raises rather than passing off part of a reply as all of it.
    """

    def __init__(self, model: OpenAICompatibleModel) -> None:
        self._model = model
        self._sse = SSEDecoder()
        self.done = False
        self._finished = False

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """The events completed by ``chunk``."""
        return self._sse.feed(chunk)

    def end(self) -> list[tuple[str, str]]:
        """The events left when the body ends."""
        return self._sse.close()

    def check_complete(self) -> None:
        """Raise if the body ended before the reply did."""
        if not (self.done or self._finished):
            raise ModelError(
                f"the stream from {self._model._shown_url} was cut: it ended before [DONE]",
                retryable=True,
            )

    def delta(self, event: tuple[str, str]) -> str:
        """The text one event adds ("" for none); raises for an error or malformed event."""
        kind, data = event
        if self.done:
            return ""
        if data.strip() == "[DONE]":
            self.done = True
            return ""
        try:
            payload = json.loads(data)
        except ValueError as exc:
            raise ModelError(
                f"model server {self._model._shown_url} sent a stream event that is not JSON"
            ) from exc
        if kind == "error" and not (isinstance(payload, dict) and "error" in payload):
            payload = {"error": payload}
        self._model._raise_if_error(payload, None)
        if not isinstance(payload, dict):
            raise ModelError(f"model server {self._model._shown_url} sent a malformed stream event")
        text = ""
        for choice in payload.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str):
                text += content
            if choice.get("finish_reason"):
                self._finished = True
        return text
