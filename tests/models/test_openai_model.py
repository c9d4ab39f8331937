"""OpenAICompatibleModel against a scripted OpenAI-compatible server on a loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from types import SimpleNamespace

import httpx
import pytest

from claw_memory.errors import ModelError
from claw_memory.models import ChatMessage, Model, OpenAICompatibleModel
from claw_memory.models import openai as openai_module
from claw_memory.models.sse import SSEDecoder
from tests.models.fake_openai import (
    CUT,
    DONE,
    AwaitDisconnect,
    FakeServer,
    chunk,
    completion,
    drop_connection,
    json_reply,
    sse_reply,
)

MESSAGES: list[ChatMessage] = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hello"},
]
SECRET = "sk-test-SECRET-0123456789"
WAIT = 5.0  # upper bound for awaiting an event; a hang fails the test instead of blocking it


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    async with FakeServer() as fake:
        yield fake


@pytest.fixture
async def model(server: FakeServer) -> AsyncIterator[OpenAICompatibleModel]:
    async with OpenAICompatibleModel(server.base_url, "test-model", backoff=0.001) as m:
        yield m


@pytest.fixture
def delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record retry delays instead of sleeping them."""
    recorded: list[float] = []

    async def fake_sleep(delay: float) -> None:
        recorded.append(delay)

    monkeypatch.setattr(openai_module, "asyncio", SimpleNamespace(sleep=fake_sleep))
    return recorded


class RecordingTransport(httpx.AsyncBaseTransport):
    """A real HTTP transport that counts the response bodies opened and closed."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.opened = 0
        self.closed = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        self.opened += 1
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_TrackedStream(response.stream, self),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


class _TrackedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, transport: RecordingTransport) -> None:
        self.inner = inner
        self.transport = transport

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self.inner:
            yield part

    async def aclose(self) -> None:
        self.transport.closed += 1
        await self.inner.aclose()


async def collect(model: OpenAICompatibleModel, into: list[str] | None = None) -> list[str]:
    """The deltas of one stream call; with ``into``, each is also kept as it arrives."""
    received = [] if into is None else into
    async for delta in model.stream(MESSAGES):
        received.append(delta)
    return received


# --- requests ---------------------------------------------------------------------------------


async def test_complete_returns_the_message_content(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script.append(json_reply(200, completion("Hi there")))
    assert await model.complete(MESSAGES) == "Hi there"
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.body == {"model": "test-model", "messages": MESSAGES, "stream": False}


async def test_null_content_is_an_empty_reply(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script.append(json_reply(200, completion(None)))
    assert await model.complete(MESSAGES) == ""


async def test_trailing_slash_and_extra_body(server: FakeServer) -> None:
    server.script.append(json_reply(200, completion("ok")))
    async with OpenAICompatibleModel(
        server.base_url + "/", "m", extra_body={"temperature": 0, "stream": "ignored"}
    ) as model:
        assert model.name == "m"
        await model.complete(MESSAGES)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["temperature"] == 0
    assert request.body["stream"] is False


async def test_authorization_header_only_with_a_key(server: FakeServer) -> None:
    server.script += [json_reply(200, completion("a")), json_reply(200, completion("b"))]
    async with OpenAICompatibleModel(server.base_url, "m", api_key=SECRET) as keyed:
        await keyed.complete(MESSAGES)
    async with OpenAICompatibleModel(server.base_url, "m") as anonymous:
        await anonymous.complete(MESSAGES)
    with_key, without_key = server.requests
    assert with_key.headers["authorization"] == f"Bearer {SECRET}"
    assert "authorization" not in without_key.headers


async def test_satisfies_the_model_protocol(model: OpenAICompatibleModel) -> None:
    assert isinstance(model, Model)
    assert model.name == "test-model"


# --- streaming --------------------------------------------------------------------------------


async def test_stream_yields_deltas_in_order_and_stops_at_done(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script.append(
        sse_reply([chunk(role="assistant"), chunk("Hel"), chunk("lo"), chunk(" you"), DONE])
    )
    assert await collect(model) == ["Hel", "lo", " you"]
    assert server.requests[0].body["stream"] is True
    assert server.requests[0].headers["accept"] == "text/event-stream"


async def test_stream_delivers_each_chunk_as_it_arrives(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    gate = asyncio.Event()
    server.script.append(sse_reply([chunk("first"), gate, chunk("second"), DONE]))
    stream = model.stream(MESSAGES)
    # The server holds "second" back until the gate opens: the first delta must arrive
    # before that, or this wait times out.
    assert await asyncio.wait_for(anext(stream), WAIT) == "first"
    assert not gate.is_set()
    gate.set()
    assert [delta async for delta in stream] == ["second"]


async def test_sse_parsing_edge_cases(server: FakeServer, model: OpenAICompatibleModel) -> None:
    usage_only = 'data: {"choices": [], "usage": {"total_tokens": 3}}\n\n'
    multi_line = 'data: {"choices": [{"index": 0,\ndata:  "delta": {"content": "B"}}]}\n\n'
    body = (
        ": keep-alive comment\n\n"
        + "retry: 1000\nid: 7\nevent: message\n"
        + chunk(role="assistant")
        + chunk("A")
        + 'data: {"choices": [{"index": 0, "delta": {"content": null}}]}\n\n'
        + usage_only
        + multi_line
        + chunk("line\u2028sep \u00e9").replace("\n", "\r\n")
        + DONE
    ).encode()
    # Split the body mid-line, mid-CRLF and mid-UTF-8 character: the parser must not care.
    pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
    server.script.append(sse_reply(pieces))
    assert await collect(model) == ["A", "B", "line\u2028sep \u00e9"]


@pytest.mark.parametrize("piece", [1, 2, 3, 1000])
def test_sse_decoder_is_indifferent_to_how_bytes_are_split(piece: int) -> None:
    # A multi-line event whose CRLF falls between two reads must stay one event.
    body = (
        "\ufeffdata: first\r\ndata: second\r\n\r\n"
        ": comment\r\r"
        "event: error\ndata: \u00e9\u2028\U0001f600\n\n"
        "data: last, unterminated"
    ).encode()
    decoder = SSEDecoder()
    events: list[tuple[str, str]] = []
    for start in range(0, len(body), piece):
        events += decoder.feed(body[start : start + piece])
    events += decoder.close()
    assert events == [
        ("message", "first\nsecond"),
        ("error", "\u00e9\u2028\U0001f600"),
        ("message", "last, unterminated"),
    ]


async def test_data_without_space_and_finish_reason_without_done(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    events = [
        'data:{"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n',
        chunk("y", finish="stop"),
    ]
    server.script.append(sse_reply(events))
    assert await collect(model) == ["x", "y"]


async def test_stream_cut_after_a_token_raises_and_is_not_retried(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script += [
        sse_reply([chunk("partial"), CUT]),
        sse_reply([chunk("should not be requested"), DONE]),
    ]
    received: list[str] = []
    with pytest.raises(ModelError, match="cut") as info:
        await collect(model, received)
    assert received == ["partial"]
    assert isinstance(info.value.__cause__, httpx.HTTPError)
    assert len(server.requests) == 1


async def test_stream_ending_before_done_is_reported_as_cut(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    # Close-delimited body: the connection ends cleanly, but [DONE] never came.
    server.script.append(sse_reply([chunk("par"), chunk("tial")], chunked=False))
    received: list[str] = []
    with pytest.raises(ModelError, match="cut"):
        await collect(model, received)
    assert received == ["par", "tial"]
    assert len(server.requests) == 1


async def test_error_event_after_first_token_is_not_retried(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    error = 'data: {"error": {"message": "upstream exploded", "code": 500}}\n\n'
    server.script += [sse_reply([chunk("a"), error]), sse_reply([chunk("b"), DONE])]
    with pytest.raises(ModelError, match="upstream exploded") as info:
        await collect(model)
    assert info.value.status == 500
    assert len(server.requests) == 1


async def test_early_break_closes_the_http_response(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script.append(sse_reply([chunk("one"), chunk("two"), AwaitDisconnect(server)]))
    async for delta in model.stream(MESSAGES):
        assert delta == "one"
        break
    # The abandoned generator is closed by the event loop's finaliser; the server must then
    # see the connection go away rather than the client keep reading.
    await asyncio.wait_for(server.disconnected.wait(), WAIT)


async def test_aclose_mid_stream_closes_the_response_before_returning(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    gate = asyncio.Event()
    server.script.append(sse_reply([chunk("one"), gate, AwaitDisconnect(server)]))
    async with contextlib.aclosing(model.stream(MESSAGES)) as stream:
        assert await asyncio.wait_for(anext(stream), WAIT) == "one"
    gate.set()
    await asyncio.wait_for(server.disconnected.wait(), WAIT)


async def test_aclose_releases_the_response_before_it_returns(server: FakeServer) -> None:
    gate = asyncio.Event()
    server.script.append(sse_reply([chunk("one"), gate, chunk("two"), DONE]))
    transport = RecordingTransport()
    async with (
        httpx.AsyncClient(transport=transport) as client,
        OpenAICompatibleModel(server.base_url, "m", client=client) as model,
    ):
        stream = model.stream(MESSAGES)
        assert await asyncio.wait_for(anext(stream), WAIT) == "one"
        assert (transport.opened, transport.closed) == (1, 0)
        await stream.aclose()
        # Closed by the generator's own cleanup, not later by a finaliser.
        assert transport.closed == 1
        gate.set()


async def test_every_finished_stream_closes_its_response(server: FakeServer) -> None:
    server.script += [
        sse_reply([chunk("a"), DONE, chunk("ignored after done")]),
        json_reply(503, "busy"),
        sse_reply([chunk("b"), CUT]),
    ]
    transport = RecordingTransport()
    async with (
        httpx.AsyncClient(transport=transport) as client,
        OpenAICompatibleModel(server.base_url, "m", client=client, max_retries=0) as model,
    ):
        assert await collect(model) == ["a"]
        with pytest.raises(ModelError):
            await collect(model)
        with pytest.raises(ModelError):
            await collect(model)
    assert transport.opened == transport.closed == 3


async def test_a_json_answer_to_a_stream_request_is_yielded_whole(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script.append(json_reply(200, completion("all at once")))
    assert await collect(model) == ["all at once"]


# --- retries and errors -----------------------------------------------------------------------


async def test_429_then_success_is_retried_honouring_retry_after(
    server: FakeServer, model: OpenAICompatibleModel, delays: list[float]
) -> None:
    server.script += [
        json_reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "2"}),
        json_reply(200, completion("finally")),
    ]
    assert await model.complete(MESSAGES) == "finally"
    assert len(server.requests) == 2
    assert delays == [2.0]


async def test_retry_after_is_capped(server: FakeServer, delays: list[float]) -> None:
    server.script += [
        json_reply(503, "busy", {"Retry-After": "3600"}),
        json_reply(200, completion("ok")),
    ]
    async with OpenAICompatibleModel(server.base_url, "m", max_retry_after=1.5) as model:
        assert await model.complete(MESSAGES) == "ok"
    assert delays == [1.5]


async def test_backoff_grows_exponentially_with_jitter(
    server: FakeServer, delays: list[float]
) -> None:
    server.script += [json_reply(502, "bad gateway") for _ in range(4)]
    async with OpenAICompatibleModel(
        server.base_url, "m", max_retries=3, backoff=1.0, max_backoff=3.0
    ) as model:
        with pytest.raises(ModelError) as info:
            await model.complete(MESSAGES)
    assert info.value.status == 502
    assert info.value.retryable is True
    assert len(server.requests) == 4
    first, second, third = delays
    assert 0.5 <= first <= 1.0
    assert 1.0 <= second <= 2.0
    assert 1.5 <= third <= 3.0  # capped at max_backoff


async def test_stream_retries_a_503_before_the_first_token(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script += [
        json_reply(503, {"error": {"message": "overloaded"}}),
        sse_reply([chunk("ok"), DONE]),
    ]
    assert await collect(model) == ["ok"]
    assert len(server.requests) == 2


async def test_dropped_connection_before_any_reply_is_retried(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script += [drop_connection(), sse_reply([chunk("back"), DONE])]
    assert await collect(model) == ["back"]
    assert len(server.requests) == 2


async def test_stream_cut_before_any_token_is_retried(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script += [sse_reply([chunk(role="assistant"), CUT]), sse_reply([chunk("ok"), DONE])]
    assert await collect(model) == ["ok"]
    assert len(server.requests) == 2


async def test_client_errors_are_not_retried(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script += [json_reply(400, {"error": {"message": "bad model"}}), json_reply(200, {})]
    with pytest.raises(ModelError, match="bad model") as info:
        await model.complete(MESSAGES)
    assert (info.value.status, info.value.retryable) == (400, False)
    assert len(server.requests) == 1


async def test_401_has_the_status_and_never_the_api_key(server: FakeServer) -> None:
    # Servers echo the rejected key back; it must not reach the error message.
    body = {"error": {"message": f"Incorrect API key provided: {SECRET}", "code": None}}
    server.script += [json_reply(401, body), json_reply(401, body)]
    async with OpenAICompatibleModel(server.base_url, "m", api_key=SECRET) as model:
        with pytest.raises(ModelError) as whole:
            await model.complete(MESSAGES)
        with pytest.raises(ModelError) as streamed:
            await collect(model)
        assert SECRET not in repr(model)
    for info in (whole, streamed):
        assert info.value.status == 401
        assert "Incorrect API key provided" in str(info.value)
        assert SECRET not in str(info.value)
        assert SECRET not in repr(info.value)
    assert len(server.requests) == 2


async def test_credentials_in_the_url_never_reach_messages(server: FakeServer) -> None:
    server.script.append(json_reply(500, "boom"))
    url = server.base_url.replace("http://", "http://user:hunter2@")
    async with OpenAICompatibleModel(url, "m", max_retries=0) as model:
        with pytest.raises(ModelError) as info:
            await model.complete(MESSAGES)
        assert "hunter2" not in repr(model)
    assert "hunter2" not in str(info.value)
    assert info.value.status == 500


async def test_connection_refused_is_a_retryable_model_error(delays: list[float]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now.
    async with OpenAICompatibleModel(
        f"http://127.0.0.1:{port}/v1", "m", api_key=SECRET, max_retries=2
    ) as model:
        with pytest.raises(ModelError) as info:
            await model.complete(MESSAGES)
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert info.value.retryable is True
    assert info.value.status is None
    assert SECRET not in str(info.value)
    assert len(delays) == 2


async def test_read_timeout_is_a_model_error(server: FakeServer) -> None:
    hold = asyncio.Event()
    server.script.append(sse_reply([hold]))
    async with OpenAICompatibleModel(server.base_url, "m", timeout=0.2, max_retries=0) as model:
        with pytest.raises(ModelError, match="timed out") as info:
            await model.complete(MESSAGES)
    assert isinstance(info.value.__cause__, httpx.TimeoutException)
    hold.set()


async def test_malformed_replies_are_model_errors(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script += [
        json_reply(200, "not json"),
        json_reply(200, {"choices": []}),
        sse_reply(["data: {not json\n\n"]),
    ]
    with pytest.raises(ModelError, match="not JSON"):
        await model.complete(MESSAGES)
    with pytest.raises(ModelError, match="choices"):
        await model.complete(MESSAGES)
    with pytest.raises(ModelError, match="not JSON"):
        await collect(model)
    assert len(server.requests) == 3


# --- lifecycle --------------------------------------------------------------------------------


async def test_closed_model_refuses_calls(server: FakeServer) -> None:
    model = OpenAICompatibleModel(server.base_url, "m")
    await model.aclose()
    await model.aclose()  # idempotent
    with pytest.raises(ModelError, match="closed"):
        await model.complete(MESSAGES)
    with pytest.raises(ModelError, match="closed"):
        await collect(model)
    assert server.requests == []


async def test_a_passed_in_client_is_left_open(server: FakeServer) -> None:
    server.script.append(json_reply(200, completion("shared")))
    async with httpx.AsyncClient() as client:
        async with OpenAICompatibleModel(server.base_url, "m", client=client) as model:
            assert await model.complete(MESSAGES) == "shared"
        assert not client.is_closed


async def test_request_body_is_json_with_the_messages(
    server: FakeServer, model: OpenAICompatibleModel
) -> None:
    server.script.append(json_reply(200, completion("ok")))
    messages: list[ChatMessage] = [{"role": "user", "content": "caf\u00e9 \u2603"}]
    await model.complete(messages)
    assert server.requests[0].headers["content-type"] == "application/json"
    assert server.requests[0].body["messages"] == json.loads(json.dumps(messages))


@pytest.mark.parametrize(
    ("base_url", "model_name"),
    [("ftp://host/v1", "m"), ("", "m"), ("http://host/v1", "")],
)
def test_invalid_arguments_are_rejected(base_url: str, model_name: str) -> None:
    with pytest.raises(ValueError):
        OpenAICompatibleModel(base_url, model_name)
