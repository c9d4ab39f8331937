"""Namespace ``conversations`` of SqlMemory: documents stored as conversation and message rows."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, select
from ulid import ULID

from claw_memory.drivers._sql_conversations import validate_conversation
from claw_memory.drivers.sql import SqlMemory
from claw_memory.errors import InvalidValueError
from tests.drivers.sql.conftest import StatementLog
from tests.support.factories import MemoryFactory

NS = "conversations"


def stamp() -> str:
    return datetime.now(UTC).isoformat()


def message(role: str, content: str | None, **extra: Any) -> dict[str, Any]:
    return {"id": str(ULID()), "role": role, "content": content, "created_at": stamp(),
            "name": None, "tool_call_id": None, "tool_calls": None, **extra}


def conversation(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": str(ULID()), "created_at": stamp(), "updated_at": stamp(), "title": None,
            "metadata": {}, "messages": list(messages), **extra}


def turn(doc: dict[str, Any], n: int) -> dict[str, Any]:
    return dict(doc, updated_at=stamp(), messages=[
        *doc["messages"], message("user", f"question {n}"), message("assistant", f"answer {n}"),
    ])


async def count_rows(memory: SqlMemory, table: Any, **where: Any) -> int:
    query = select(func.count()).select_from(table)
    for column, value in where.items():
        query = query.where(table.c[column] == value)
    async with memory.engine.connect() as conn:
        return int((await conn.execute(query)).scalar_one())


async def test_get_returns_the_document_that_was_set(memory: SqlMemory) -> None:
    doc = conversation(
        message("system", "be brief"),
        message("user", "Wie spät ist es? 🐍 \x00 nul"),
        message("assistant", None, tool_calls=[{"id": "call_1", "type": "function",
                                                "function": {"name": "clock", "arguments": "{}"}}]),
        message("tool", "12:00", tool_call_id="call_1", name="clock"),
        title="Zeit", metadata={"user": "u-1", "n": 1.5, "tiny": 1e-300, "neg": -0.0,
                                "big": 2**63 + 1, "nul": "a\x00b"},
    )
    await memory.set(doc["id"], doc, NS)
    got = await memory.get(doc["id"], NS)
    assert got == doc
    assert repr(got) == repr(doc)  # same types, same float forms, same key order
    assert await memory.has(doc["id"], NS)
    assert await memory.all(NS) == {doc["id"]: doc}


async def test_absent_optional_fields_stay_absent_and_extra_fields_survive(
    memory: SqlMemory,
) -> None:
    lean = {"id": str(ULID()), "role": "user", "content": "hi", "created_at": stamp()}
    doc: dict[str, Any] = {"id": str(ULID()), "created_at": stamp(), "updated_at": stamp(),
                           "messages": [dict(lean, extra={"kept": True})], "custom": [1, 2]}
    await memory.set(doc["id"], doc, NS)
    got = await memory.get(doc["id"], NS)
    assert got == doc
    assert "title" not in got
    assert "name" not in got["messages"][0]


async def test_readable_columns_hold_the_conversation(memory: SqlMemory) -> None:
    doc = conversation(message("user", "hello"), message("assistant", "hi there"),
                       title="greeting", metadata={"channel": "web"})
    await memory.set(doc["id"], doc, NS)
    t = memory.tables
    async with memory.engine.connect() as conn:
        row = (await conn.execute(select(t.conversations).where(
            t.conversations.c.id == doc["id"]))).one()
        messages = (await conn.execute(
            select(t.messages.c.id, t.messages.c.role, t.messages.c.content)
            .where(t.messages.c.conversation_id == doc["id"]).order_by(t.messages.c.position)
        )).all()
    assert row.title == "greeting"
    assert row.metadata == {"channel": "web"}
    assert row.message_count == 2
    assert row.created_at == datetime.fromisoformat(doc["created_at"])
    assert [tuple(m) for m in messages] == [
        (m["id"], m["role"], m["content"]) for m in doc["messages"]
    ]


async def test_two_hundred_turns_insert_only_the_new_messages(
    memory: SqlMemory, statement_log: Callable[[], StatementLog]
) -> None:
    t = memory.tables
    doc = conversation(message("system", "be helpful"))
    await memory.set(doc["id"], doc, NS)
    log = statement_log()
    per_turn: list[tuple[int, int, int]] = []
    for n in range(1, 201):
        doc = turn(doc, n)
        log.clear()
        await memory.set(doc["id"], doc, NS)
        inserted = sum(rows for _, rows in log.matching("INSERT", t.messages.name))
        deleted = log.matching("DELETE", t.messages.name)
        per_turn.append((len(log.statements), inserted, len(deleted)))
    # Constant work per turn: the same few statements, two message rows, nothing deleted.
    assert {statements for statements, _, _ in per_turn} == {per_turn[0][0]}
    assert per_turn[0][0] <= 3
    assert {(inserted, deleted) for _, inserted, deleted in per_turn} == {(2, 0)}
    assert await count_rows(memory, t.messages, conversation_id=doc["id"]) == 401
    assert await memory.get(doc["id"], NS) == doc


async def test_another_process_appending_still_inserts_only_new_messages(
    memory: SqlMemory, statement_log: Callable[[], StatementLog]
) -> None:
    other = SqlMemory(memory.engine, table_prefix=memory.tables.memory.name[: -len(
        "phpclaw_memory")])
    t = memory.tables
    doc = turn(conversation(), 1)
    await memory.set(doc["id"], doc, NS)
    log = statement_log()
    for n in range(2, 6):
        doc = turn(doc, n)
        writer = other if n % 2 else memory  # neither knows what the other saved
        log.clear()
        await writer.set(doc["id"], doc, NS)
        assert log.matching("DELETE", t.messages.name) == []
        assert sum(rows for _, rows in log.matching("INSERT", t.messages.name)) == 2
    assert await memory.get(doc["id"], NS) == doc
    assert await other.get(doc["id"], NS) == doc
    await other.aclose()


@pytest.mark.parametrize("change", ["edit", "shrink", "reorder", "replace"])
async def test_changed_or_shorter_history_is_rewritten_correctly(
    memory: SqlMemory, change: str
) -> None:
    doc = turn(turn(turn(conversation(), 1), 2), 3)
    await memory.set(doc["id"], doc, NS)
    changed = copy.deepcopy(doc)
    if change == "edit":
        changed["messages"][1]["content"] = "edited answer"
    elif change == "shrink":
        changed["messages"] = changed["messages"][:3]
    elif change == "reorder":
        changed["messages"].reverse()
    else:
        changed["messages"] = [message("user", "fresh start")]
    await memory.set(doc["id"], changed, NS)
    assert await memory.get(doc["id"], NS) == changed
    grown = turn(changed, 4)  # appending after a rewrite
    await memory.set(doc["id"], grown, NS)
    assert await memory.get(doc["id"], NS) == grown
    other = SqlMemory(memory.engine, table_prefix=memory.tables.memory.name[: -len(
        "phpclaw_memory")])
    assert await other.get(doc["id"], NS) == grown
    await other.aclose()


async def test_mutating_a_saved_document_does_not_change_what_is_stored(
    memory: SqlMemory,
) -> None:
    doc = turn(conversation(), 1)
    await memory.set(doc["id"], doc, NS)
    doc["messages"][0]["content"] = "changed after set"
    assert (await memory.get(doc["id"], NS))["messages"][0]["content"] == "question 1"
    # The edited history is noticed on the next save, even from the same process.
    await memory.set(doc["id"], doc, NS)
    assert (await memory.get(doc["id"], NS))["messages"][0]["content"] == "changed after set"


async def test_forgetting_a_conversation_deletes_its_messages(memory: SqlMemory) -> None:
    t = memory.tables
    keep = turn(conversation(), 1)
    gone = turn(turn(conversation(), 1), 2)
    await memory.set(keep["id"], keep, NS)
    await memory.set(gone["id"], gone, NS)
    await memory.forget(gone["id"], NS)
    assert await memory.get(gone["id"], NS) is None
    assert not await memory.has(gone["id"], NS)
    assert await count_rows(memory, t.messages, conversation_id=gone["id"]) == 0
    assert await count_rows(memory, t.messages, conversation_id=keep["id"]) == 2
    await memory.flush(NS)
    assert await count_rows(memory, t.messages) == 0
    assert await count_rows(memory, t.conversations) == 0
    assert await memory.all(NS) == {}


async def test_deleting_the_conversation_row_cascades_to_its_messages(
    memory: SqlMemory,
) -> None:
    t = memory.tables
    doc = turn(conversation(), 1)
    await memory.set(doc["id"], doc, NS)
    async with memory.engine.begin() as conn:
        if memory.engine.dialect.name == "sqlite":  # SQLite enforces foreign keys on request
            await conn.exec_driver_sql("PRAGMA foreign_keys=ON")
        await conn.execute(t.conversations.delete().where(t.conversations.c.id == doc["id"]))
    assert await count_rows(memory, t.messages, conversation_id=doc["id"]) == 0


async def test_conversation_ttl_hides_it_when_expired(memory: SqlMemory) -> None:
    doc = turn(conversation(), 1)
    await memory.set(doc["id"], doc, NS, ttl=0.2)
    lasting = turn(conversation(), 1)
    await memory.set(lasting["id"], lasting, NS, ttl=3600)
    deadline = asyncio.get_running_loop().time() + 10
    while await memory.has(doc["id"], NS):
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    assert await memory.get(doc["id"], NS) is None
    assert list(await memory.all(NS)) == [lasting["id"]]
    await memory.purge_expired()
    assert await count_rows(memory, memory.tables.messages, conversation_id=doc["id"]) == 0
    # Setting it again (without TTL) brings it back for good.
    await memory.set(doc["id"], doc, NS)
    assert await memory.get(doc["id"], NS) == doc


async def test_all_is_oldest_first_and_search_ranks_documents(memory: SqlMemory) -> None:
    first = conversation(message("user", "my parcel locker code"))
    second = conversation(message("user", "book a dinner table"))
    await memory.set(first["id"], first, NS)
    await memory.set(second["id"], second, NS)
    assert list(await memory.all(NS)) == [first["id"], second["id"]]
    await memory.set(first["id"], turn(first, 1), NS)
    assert list(await memory.all(NS)) == [second["id"], first["id"]]
    hits = await memory.search("parcel locker", 5, NS)
    assert [(h.key, h.score) for h in hits] == [(first["id"], 2.0)]
    assert hits[0].namespace == NS
    assert hits[0].stored_at is not None
    entries = await memory.entries(NS)
    assert [e.key for e in entries] == [second["id"], first["id"]]
    assert NS in await memory.namespaces()


def bad_documents() -> list[tuple[str, Any, str]]:
    doc = turn(conversation(), 1)

    def with_message(**change: Any) -> dict[str, Any]:
        broken = copy.deepcopy(doc)
        broken["messages"][0].update(change)
        return broken

    return [
        ("not a dict", "plain text", "conversation documents"),
        ("list", [doc], "conversation documents"),
        ("no messages", {k: v for k, v in doc.items() if k != "messages"}, "messages"),
        ("bad created_at", dict(doc, created_at="yesterday"), "created_at"),
        ("title type", dict(doc, title=3), "title"),
        ("metadata type", dict(doc, metadata=[1]), "metadata"),
        ("message not dict", dict(doc, messages=["hi"]), "message 0"),
        ("role", with_message(role="robot"), "role"),
        ("message id", with_message(id="not-a-ulid"), "ULID"),
        ("lower-case id", with_message(id=str(ULID()).lower()), "canonical"),
        ("content type", with_message(content=5), "content"),
        ("tool_calls type", with_message(tool_calls="x"), "tool_calls"),
        ("not json", with_message(extra={1, 2}), "JSON"),
        ("nan", dict(doc, metadata={"x": float("nan")}), "non-finite"),
    ]


async def test_anything_but_a_conversation_document_is_rejected(memory: SqlMemory) -> None:
    existing = turn(conversation(), 1)
    await memory.set(existing["id"], existing, NS)
    for name, value, match in bad_documents():
        key: str = existing["id"]
        if isinstance(value, dict):
            value = dict(value, id=key)
        with pytest.raises(InvalidValueError, match=match):
            await memory.set(key, value, NS)
        assert await memory.get(existing["id"], NS) == existing, name
    with pytest.raises(InvalidValueError, match="equal its key"):
        await memory.set(str(ULID()), existing, NS)
    with pytest.raises(InvalidValueError, match="ULID"):
        await memory.set("not-a-ulid", dict(existing, id="not-a-ulid"), NS)
    # A broken append to an existing conversation writes nothing either.
    broken = turn(existing, 2)
    broken["messages"][-1]["role"] = "robot"
    with pytest.raises(InvalidValueError, match="role"):
        await memory.set(existing["id"], broken, NS)
    assert await memory.get(existing["id"], NS) == existing
    assert list(await memory.all(NS)) == [existing["id"]]


def test_validator_accepts_the_engine_format_and_names_the_problem() -> None:
    doc = turn(conversation(message("system", "rules")), 1)
    validate_conversation(doc["id"], doc)
    broken = copy.deepcopy(doc)
    broken["messages"][2]["created_at"] = 12
    with pytest.raises(InvalidValueError, match="message 2's 'created_at'"):
        validate_conversation(doc["id"], broken)


async def test_concurrent_first_saves_of_one_conversation_both_succeed(
    sql_memory_factory: MemoryFactory,
) -> None:
    async with sql_memory_factory() as memory:
        assert isinstance(memory, SqlMemory)
        other = SqlMemory(memory.engine, table_prefix=memory.tables.memory.name[: -len(
            "phpclaw_memory")])
        doc = turn(conversation(), 1)
        longer = turn(doc, 2)
        await asyncio.gather(memory.set(doc["id"], doc, NS), other.set(doc["id"], longer, NS))
        assert await memory.get(doc["id"], NS) in (doc, longer)
        await other.aclose()
