"""SqlMemory.restore: one transaction per batch, absolute expiry kept, conversations as rows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event

from claw_memory.contracts import MemoryEntry
from claw_memory.drivers.sql import SqlMemory
from claw_memory.errors import InvalidValueError
from tests.drivers.sql.conftest import StatementLog
from tests.drivers.sql.test_conversations import conversation, count_rows, message, turn

NS = "conversations"


def hours_ahead(hours: float) -> datetime:
    """A moment ``hours`` from now with a non-zero microsecond part."""
    moment = datetime.now(UTC) + timedelta(hours=hours)
    return moment.replace(microsecond=moment.microsecond | 1)


def commits(memory: SqlMemory) -> list[object]:
    seen: list[object] = []
    event.listen(memory.engine.sync_engine, "commit", seen.append)
    return seen


async def test_a_batch_over_two_namespaces_keeps_its_order_and_makes_restored_keys_newest(
    memory: SqlMemory,
) -> None:
    for key in ("a", "b", "c"):
        await memory.set(key, f"old {key}", "left")
    await memory.set("x", "old x", "right")
    await memory.restore([
        MemoryEntry("b", "new b", "left", None, None),
        MemoryEntry("y", {"new": "y"}, "right", None, None),
        MemoryEntry("d", "new d", "left", None, hours_ahead(1)),
        MemoryEntry("x", ["new x"], "right", None, None),
        MemoryEntry("a", "newest a", "left", None, None),
    ])
    assert list((await memory.all("left")).items()) == [
        ("c", "old c"), ("b", "new b"), ("d", "new d"), ("a", "newest a"),
    ]
    assert list((await memory.all("right")).items()) == [("y", {"new": "y"}), ("x", ["new x"])]
    assert [e.key for e in await memory.entries("left")] == ["c", "b", "d", "a"]


async def test_a_key_given_twice_keeps_its_last_value_and_place(memory: SqlMemory) -> None:
    await memory.restore([
        MemoryEntry("k", 1, "twice", None, None),
        MemoryEntry("m", 2, "twice", None, None),
        MemoryEntry("k", 3, "twice", None, hours_ahead(2)),
    ])
    assert list((await memory.all("twice")).items()) == [("m", 2), ("k", 3)]


async def test_entries_report_the_expiry_given_to_the_microsecond(memory: SqlMemory) -> None:
    precise = hours_ahead(1)
    # What ``claw-memory export`` writes: UNIX seconds rounded to the millisecond.
    exported = round(hours_ahead(5).timestamp(), 3)
    await memory.restore([
        MemoryEntry("precise", "p", "default", None, precise),
        MemoryEntry("exported", "e", "default", None, datetime.fromtimestamp(exported, UTC)),
    ])
    entries = {e.key: e.expires_at for e in await memory.entries()}
    assert entries["precise"] == precise
    got = entries["exported"]
    assert got is not None
    assert round(got.timestamp(), 3) == exported


async def test_none_never_expires_even_with_a_default_ttl(memory: SqlMemory) -> None:
    memory.default_ttl = 60
    await memory.restore([MemoryEntry("forever", "f", "default", None, None)])
    await memory.set("defaulted", "d")
    entries = {e.key: e.expires_at for e in await memory.entries()}
    assert entries["forever"] is None
    assert entries["defaulted"] is not None  # the default does apply to set


async def test_a_batch_of_1000_entries_is_one_transaction_and_one_upsert(
    memory: SqlMemory, statement_log: Callable[[], StatementLog]
) -> None:
    await memory.create_schema()
    await memory.set("before", "earlier")
    docs = [conversation(message("user", f"hello {i}")) for i in range(3)]
    batch = [
        MemoryEntry(f"k{i:04d}", {"n": i, "words": f"word{i} shared"}, f"ns{i % 2}", None,
                    None if i % 3 else hours_ahead(1))
        for i in range(1000)
    ] + [MemoryEntry(doc["id"], doc, NS, None, None) for doc in docs]
    seen = commits(memory)
    log = statement_log()
    await memory.restore(batch)
    assert len(seen) == 1
    assert len(log.matching("INSERT", memory.tables.memory.name)) == 1
    assert await memory.all("ns0") == {f"k{i:04d}": batch[i].value for i in range(0, 1000, 2)}
    assert len(await memory.all("ns1")) == 500
    assert await memory.all(NS) == {doc["id"]: doc for doc in docs}


async def test_restored_entries_are_found_by_search_like_set_ones(memory: SqlMemory) -> None:
    await memory.set("set", "gold tier customer", "s")
    await memory.restore([
        MemoryEntry("restored", "gold customer in Lisbon", "s", None, None),
        MemoryEntry("other", "nothing relevant", "s", None, None),
    ])
    hits = await memory.search("gold customer", 5, "s")
    assert [(h.key, h.score) for h in hits] == [("restored", 2.0), ("set", 2.0)]
    await memory.restore([MemoryEntry("restored", "silver", "s", None, None)])
    assert [h.key for h in await memory.search("gold", 5, "s")] == ["set"]
    assert [h.key for h in await memory.search("silver", 5, "s")] == ["restored"]


async def test_conversations_are_restored_as_documents_with_their_expiry(
    memory: SqlMemory, statement_log: Callable[[], StatementLog]
) -> None:
    first = conversation(message("user", "hi"), message("assistant", "hello"), title="T")
    second = conversation(message("user", "other"))
    expires = hours_ahead(3)
    await memory.restore([
        MemoryEntry(first["id"], first, NS, None, expires),
        MemoryEntry(second["id"], second, NS, None, None),
    ])
    assert await memory.get(first["id"], NS) == first
    entries = await memory.entries(NS)
    assert [(e.key, e.expires_at) for e in entries] == [
        (first["id"], expires), (second["id"], None),
    ]
    assert await count_rows(memory, memory.tables.messages, conversation_id=first["id"]) == 2
    # Restoring the first again makes it the newest.
    await memory.restore([MemoryEntry(first["id"], first, NS, None, None)])
    assert [e.key for e in await memory.entries(NS)] == [second["id"], first["id"]]
    # The next turn is appended: only its two messages are inserted.
    log = statement_log()
    await memory.set(first["id"], turn(first, 2), NS)
    inserted = log.matching("INSERT", memory.tables.messages.name)
    assert [rows for _, rows in inserted] == [2]
    assert await count_rows(memory, memory.tables.messages, conversation_id=first["id"]) == 4


@pytest.mark.parametrize(
    "bad", ["not a document", {"id": "wrong", "messages": []}, "bad message"],
    ids=["not-a-dict", "wrong-id", "bad-message"],
)
async def test_an_invalid_conversation_writes_nothing_of_the_batch(
    memory: SqlMemory, bad: Any
) -> None:
    good = conversation(message("user", "fine"))
    doc = conversation(message("user", "ok"))
    if bad == "bad message":
        bad = dict(doc, messages=[message("user", "ok"), {"role": "robot"}])
    key = doc["id"]
    seen = commits(memory)
    with pytest.raises(InvalidValueError):
        await memory.restore([
            MemoryEntry("plain", 1, "default", None, None),
            MemoryEntry(good["id"], good, NS, None, None),
            MemoryEntry(key, bad, NS, None, None),
        ])
    assert seen == []
    assert await memory.all() == {}
    assert await memory.all(NS) == {}



async def test_concurrent_restores_of_the_same_keys_in_opposite_orders_all_commit(
    memory: SqlMemory,
) -> None:
    await memory.create_schema()
    keys = [f"k{i:04d}" for i in range(1000)]
    for _ in range(3):
        batches = [
            [MemoryEntry(k, f"batch {j}", "shared", None, None)
             for k in (keys if j % 2 == 0 else reversed(keys))]
            for j in range(4)
        ]
        await asyncio.wait_for(
            asyncio.gather(*(memory.restore(batch) for batch in batches)), timeout=60
        )
        stored = await memory.all("shared")
        assert sorted(stored) == keys
        assert len(set(stored.values())) == 1  # each batch committed whole, one after another
