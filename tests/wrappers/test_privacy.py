"""PrivacyAwareMemory: writes dropped when message storage is off, everything else passes."""

from __future__ import annotations

import pytest

from claw_memory import (
    ArrayMemory,
    InvalidKeyError,
    InvalidTTLError,
    InvalidValueError,
    PrivacyAwareMemory,
)
from tests.support.factories import PlainMemory


async def test_sets_are_dropped_and_reads_forget_flush_pass_through() -> None:
    inner = ArrayMemory()
    await inner.set("old", "stored earlier words")
    private = PrivacyAwareMemory(inner)  # store_messages defaults to False
    await private.set("new", "dropped words")
    assert await inner.all() == {"old": "stored earlier words"}
    assert await private.get("old") == "stored earlier words"
    assert await private.has("new") is False
    assert [h.key for h in await private.search("words")] == ["old"]
    await private.forget("old")
    assert await inner.all() == {}
    await inner.set("x", 1, "ns")
    await private.flush("ns")
    assert await inner.all("ns") == {}


async def test_a_dropped_set_still_rejects_bad_input() -> None:
    private = PrivacyAwareMemory(ArrayMemory())
    with pytest.raises(InvalidKeyError):
        await private.set("", 1)
    with pytest.raises(InvalidValueError):
        await private.set("k", {1, 2})
    with pytest.raises(InvalidTTLError):
        await private.set("k", 1, ttl=-1)


async def test_switching_storage_on_stores() -> None:
    inner = ArrayMemory()
    private = PrivacyAwareMemory(inner, store_messages=True)
    await private.set("k", "v")
    private.store_messages = False
    await private.set("k", "changed")
    assert await inner.get("k") == "v"


async def test_search_over_a_plain_driver_ranks_its_entries() -> None:
    plain = PlainMemory()
    await plain.set("a", "apple pie")
    hits = await PrivacyAwareMemory(plain).search("apple")
    assert [(h.key, h.score) for h in hits] == [("a", 1.0)]
