"""Models, memories and an event recorder for the engine tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

from claw_memory.contracts import Memory, MemoryHit, SearchableMemory
from claw_memory.hooks import Hooks
from claw_memory.models import ChatMessage

EVENTS = (
    "memory.read",
    "memory.write",
    "memory.forget",
    "memory.search",
    "memory.recalled",
    "guard.blocked",
    "agent.before",
    "agent.after",
    "agent.error",
    "conversation.start",
    "conversation.end",
    "stream.start",
    "stream.end",
    "stream.abort",
)


def record(hooks: Hooks, names: Sequence[str] = EVENTS) -> list[dict[str, Any]]:
    """Subscribe to ``names`` on ``hooks``; returns the list each payload is appended to."""
    seen: list[dict[str, Any]] = []
    for name in names:
        hooks.on(name, lambda payload: seen.append(dict(payload)))
    return seen


async def drain(stream: AsyncIterator[str], into: list[str]) -> None:
    """Read ``stream`` to its end, appending each delta to ``into``."""
    async for chunk in stream:
        into.append(chunk)


def named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [event for event in events if event["event"] == name]


class RecordingModel:
    """Echoes the last message and keeps every message list it was given."""

    name = "recording"

    def __init__(self, chunk: int = 3) -> None:
        self.calls: list[list[ChatMessage]] = []
        self.chunk = chunk

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        self.calls.append(list(messages))
        return messages[-1]["content"]

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncGenerator[str, None]:
        self.calls.append(list(messages))
        text = messages[-1]["content"]
        for start in range(0, len(text), self.chunk):
            yield text[start : start + self.chunk]


class GatedModel:
    """Streams ``first``, then waits for ``gate`` before streaming ``rest``.

    ``sent_first`` is set once the first chunk is out (or ``complete`` was called);
    ``closed`` once the stream's ``finally`` ran (the engine closed it).
    """

    name = "gated"

    def __init__(self, first: str = "Hel", rest: str = "lo") -> None:
        self.first = first
        self.rest = rest
        self.gate = asyncio.Event()
        self.sent_first = asyncio.Event()
        self.closed = asyncio.Event()
        self.streams = 0

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        self.sent_first.set()
        await self.gate.wait()
        return self.first + self.rest

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncGenerator[str, None]:
        self.streams += 1
        try:
            yield self.first
            self.sent_first.set()
            await self.gate.wait()
            yield self.rest
        finally:
            self.closed.set()


class FailingModel:
    """Raises ``error`` from ``complete``, and from ``stream`` after ``before`` chunks."""

    name = "failing"

    def __init__(self, error: BaseException, before: int = 1) -> None:
        self.error = error
        self.before = before
        self.closed = False

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        raise self.error

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncGenerator[str, None]:
        try:
            for _ in range(self.before):
                yield "part"
            raise self.error
        finally:
            self.closed = True


class BrokenMemory(SearchableMemory):
    """Every call raises ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def get(self, key: str, namespace: str = "default") -> Any:
        raise self.error

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        raise self.error

    async def forget(self, key: str, namespace: str = "default") -> None:
        raise self.error

    async def flush(self, namespace: str = "default") -> None:
        raise self.error

    async def all(self, namespace: str = "default") -> dict[str, Any]:
        raise self.error

    async def has(self, key: str, namespace: str = "default") -> bool:
        raise self.error

    async def search(
        self, query: str, limit: int = 5, namespace: str = "default"
    ) -> list[MemoryHit]:
        raise self.error


class CountingMemory(Memory):
    """A plain (search-less) memory over a dict that counts ``all`` calls."""

    def __init__(self, entries: dict[str, Any]) -> None:
        self.entries = dict(entries)
        self.all_calls = 0

    async def get(self, key: str, namespace: str = "default") -> Any:
        return self.entries.get(key) if namespace == "default" else None

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        if namespace == "default":
            self.entries[key] = value

    async def forget(self, key: str, namespace: str = "default") -> None:
        self.entries.pop(key, None)

    async def flush(self, namespace: str = "default") -> None:
        self.entries.clear()

    async def all(self, namespace: str = "default") -> dict[str, Any]:
        self.all_calls += 1
        return dict(self.entries) if namespace == "default" else {}

    async def has(self, key: str, namespace: str = "default") -> bool:
        return key in self.entries
