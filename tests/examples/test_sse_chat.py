"""examples/sse_chat.py: SSE replies, conversations persisted in Redis, client disconnects."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from claw_memory.drivers.redis import RedisMemory
from claw_memory.engine import Claw
from claw_memory.models import ChatMessage, EchoModel, last_user_message
from tests.examples._load import load_example
from tests.support.drivers_redis import REDIS_URL
from tests.support.services import redis_available, require

sse_chat = load_example("sse_chat")
DEADLINE = 20.0


class GateModel:
    """Streams the first four characters, then waits for :attr:`gate` before the rest."""

    name = "gate"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.closed = asyncio.Event()

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        return last_user_message(messages)

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncGenerator[str, None]:
        text = last_user_message(messages)
        try:
            yield text[:4]
            self.started.set()
            await self.gate.wait()
            yield text[4:]
        finally:
            self.closed.set()


@contextlib.asynccontextmanager
async def serve(app: Starlette) -> AsyncIterator[str]:
    """Run ``app`` on uvicorn on a free loopback port; yields its base URL."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not server.started:
        assert not task.done(), "uvicorn stopped while starting"
        assert loop.time() < end, "uvicorn did not start in time"
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, DEADLINE)


async def events(response: httpx.Response) -> AsyncIterator[tuple[str | None, dict[str, Any]]]:
    """``(event name, data)`` for each Server-Sent Event of ``response``."""
    name: str | None = None
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            yield name, json.loads(line[len("data: "):])
        elif not line:
            name = None


async def chat(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> list[
    tuple[str | None, dict[str, Any]]
]:
    async with client.stream("POST", f"{url}/chat", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return [event async for event in events(response)]


async def test_replies_stream_as_events_and_conversations_persist_in_redis(
    redis_memory: RedisMemory,
) -> None:
    agent = Claw.builder().memory(redis_memory).model(EchoModel()).build()
    await redis_memory.set("city", "my home city is Lisbon")
    async with serve(sse_chat.create_app(agent)) as url, httpx.AsyncClient(
        timeout=DEADLINE
    ) as client:
        first = await chat(client, url, {"message": "Hello, I am Alice"})
        assert first[0][0] == "conversation"
        conversation_id = first[0][1]["id"]
        deltas = [data["delta"] for name, data in first if name is None]
        assert len(deltas) > 1  # streamed in pieces, not in one block
        assert "".join(deltas) == "Hello, I am Alice"
        assert first[-1] == ("done", {"conversation_id": conversation_id, "turns": 1,
                                      "recalled": []})

        second = await chat(client, url, {"message": "Which city is my home?",
                                          "conversation_id": conversation_id})
        reply = "".join(data["delta"] for name, data in second if name is None)
        assert "- city: my home city is Lisbon" in reply
        assert second[-1] == ("done", {"conversation_id": conversation_id, "turns": 2,
                                       "recalled": ["city"]})

        stored = await client.get(f"{url}/conversations/{conversation_id}")
        assert stored.status_code == 200
        assert [m["content"] for m in stored.json()["messages"]][::2] == [
            "Hello, I am Alice", "Which city is my home?",
        ]
        assert (await client.get(f"{url}/conversations/unknown")).status_code == 404
        bad = await client.post(f"{url}/chat", json={"message": ""})
        assert bad.status_code == 400

    document = await redis_memory.get(conversation_id, "conversations")
    assert [m["role"] for m in document["messages"]] == ["user", "assistant"] * 2


async def test_a_client_that_disconnects_stops_the_model_and_stores_nothing(
    redis_memory: RedisMemory,
) -> None:
    model = GateModel()
    agent = Claw.builder().memory(redis_memory).model(model).build()
    async with serve(sse_chat.create_app(agent)) as url, httpx.AsyncClient(
        timeout=DEADLINE
    ) as client:
        async with client.stream("POST", f"{url}/chat",
                                 json={"message": "a reply that never ends"}) as response:
            received = []
            async for name, data in events(response):
                received.append((name, data))
                if name is None:
                    break  # the first delta: now hang up
        assert received[0][0] == "conversation"
        assert received[1] == (None, {"delta": "a re"})
        conversation_id = received[0][1]["id"]
        await asyncio.wait_for(model.closed.wait(), DEADLINE)
        assert not model.gate.is_set()
        assert await redis_memory.get(conversation_id, "conversations") is None
        assert (await client.get(f"{url}/conversations/{conversation_id}")).status_code == 404


async def test_the_example_builds_its_own_redis_memory_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CLAW_MODEL", raising=False)
    assert isinstance(sse_chat.model_from_environment(), EchoModel)
    monkeypatch.setenv("CLAW_MODEL", "http://127.0.0.1:11434/v1/llama3.2")
    remote = sse_chat.model_from_environment()
    assert (remote.name, remote.base_url) == ("llama3.2", "http://127.0.0.1:11434/v1")
    await remote.aclose()

    if not require("redis", redis_available(), None):
        return
    monkeypatch.setenv("REDIS_URL", REDIS_URL)
    monkeypatch.delenv("CLAW_MODEL")
    async with serve(sse_chat.build()) as url, httpx.AsyncClient(timeout=DEADLINE) as client:
        missing = await client.get(f"{url}/conversations/01ARZ3NDEKTSV4RRFFQ69G5FAV")
        assert missing.status_code == 404
