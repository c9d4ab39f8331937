"""ArrayMemory specifics beyond the conformance suite: index upkeep and exact expiry."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from claw_memory import ArrayMemory, KeywordIndex
from claw_memory.drivers import array as array_module


async def test_entry_expires_at_the_moment_its_ttl_runs_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(array_module, "_monotonic", lambda: now[0])
    memory = ArrayMemory()
    await memory.set("k", "some words", ttl=10)
    now[0] = 1009.999
    assert await memory.get("k") == "some words"
    assert [h.key for h in await memory.search("words")] == ["k"]
    now[0] = 1010.0
    assert await memory.get("k") is None
    assert await memory.all() == {}
    assert await memory.search("words") == []


async def test_expiry_heap_does_not_grow_with_overwrites(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = ArrayMemory()
    for i in range(5000):
        await memory.set("same", i, ttl=3600)
    await memory.all()
    assert len(memory._spaces["default"].expiry) <= 2 * 1 + 64


async def test_default_ttl_applies_when_ttl_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [50.0]
    monkeypatch.setattr(array_module, "_monotonic", lambda: now[0])
    memory = ArrayMemory(default_ttl=5)
    await memory.set("a", 1)
    await memory.set("b", 2, ttl=0)
    now[0] = 55.0
    assert await memory.all() == {"b": 2}


async def test_search_only_visits_matching_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    memory = ArrayMemory()
    for i in range(2000):
        await memory.set(f"k{i}", f"filler sentence number {i % 50} about nothing")
    await memory.set("needle", "the rare zeppelin fact")
    await memory.search("warm up the index")  # the first search indexes pending writes
    visited: list[str] = []
    original = KeywordIndex.search

    def counting_search(
        self: KeywordIndex, query: str, limit: int, lookup: Callable[[str], Any]
    ) -> list[tuple[str, int]]:
        def spy(key: str) -> Any:
            visited.append(key)
            return lookup(key)

        return original(self, query, limit, spy)

    monkeypatch.setattr(KeywordIndex, "search", counting_search)
    hits = await memory.search("zeppelin")
    assert [h.key for h in hits] == ["needle"]
    assert visited == ["needle"]


async def test_stored_at_is_utc_and_recent() -> None:
    memory = ArrayMemory()
    before = time.time()
    await memory.set("k", "timestamped words")
    (hit,) = await memory.search("timestamped")
    assert hit.stored_at is not None
    assert before - 1 <= hit.stored_at.timestamp() <= time.time() + 1
