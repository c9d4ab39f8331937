"""SqlMemory's schema: idempotent creation, recorded migrations, in-place upgrade, column types."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import inspect, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from ulid import ULID

from claw_memory.drivers._sql_schema import LATEST_VERSION, build_tables, migrate
from claw_memory.drivers.sql import SqlMemory


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(database_url)
    yield engine
    await engine.dispose()


async def versions(engine: AsyncEngine, prefix: str) -> list[int]:
    table = build_tables(prefix).migrations
    async with engine.connect() as conn:
        return list((await conn.execute(select(table.c.version).order_by("version"))).scalars())


async def test_create_schema_is_idempotent_and_records_versions(
    engine: AsyncEngine, fresh_prefix: str
) -> None:
    memory = SqlMemory(engine, table_prefix=fresh_prefix, auto_create=False)
    await memory.create_schema()
    await memory.set("k", "v")
    await memory.create_schema()
    await SqlMemory(engine, table_prefix=fresh_prefix).create_schema()
    assert await versions(engine, fresh_prefix) == list(range(1, LATEST_VERSION + 1))
    assert await memory.get("k") == "v"


async def test_first_operation_creates_the_schema(engine: AsyncEngine, fresh_prefix: str) -> None:
    memory = SqlMemory(engine, table_prefix=fresh_prefix)
    assert await memory.all() == {}
    assert await versions(engine, fresh_prefix) == list(range(1, LATEST_VERSION + 1))


async def test_a_version_one_database_upgrades_in_place(
    engine: AsyncEngine, fresh_prefix: str
) -> None:
    async with engine.begin() as conn:
        assert await conn.run_sync(migrate, fresh_prefix, 1) == 1
    old = build_tables(fresh_prefix, version=1)
    now = datetime.now(UTC)
    cid, mid = str(ULID()), str(ULID())
    header = f'{{"id":"{cid}","created_at":"{now.isoformat()}","updated_at":"{now.isoformat()}"}}'
    first = (f'{{"id":"{mid}","role":"user","content":"remember the gold tier",'
             f'"created_at":"{now.isoformat()}"}}')
    async with engine.begin() as conn:
        await conn.execute(old.memory.insert(), [
            {"namespace": "default", "key": "tier", "value": '"gold tier customer"', "seq": 1,
             "created_at": now, "updated_at": now},
            {"namespace": "default", "key": "rule", "value": '{"discount":"gold percent"}',
             "seq": 2, "created_at": now, "updated_at": now},
        ])
        await conn.execute(old.conversations.insert(), {
            "id": cid, "document": header, "seq": 3, "created_at": now, "updated_at": now})
        await conn.execute(old.messages.insert(), {
            "conversation_id": cid, "position": 0, "id": mid, "role": "user",
            "content": "remember the gold tier", "document": first, "created_at": now})

    memory = SqlMemory(engine, table_prefix=fresh_prefix, auto_create=False)
    await memory.create_schema()
    assert await versions(engine, fresh_prefix) == [1, 2]
    assert await memory.all() == {
        "tier": "gold tier customer", "rule": {"discount": "gold percent"},
    }
    hits = await memory.search("gold tier", 5)
    assert [(h.key, h.score) for h in hits] == [("tier", 2.0), ("rule", 1.0)]
    doc = await memory.get(cid, "conversations")
    assert [m["content"] for m in doc["messages"]] == ["remember the gold tier"]
    doc["messages"].append({"id": str(ULID()), "role": "assistant", "content": "noted",
                            "created_at": now.isoformat()})
    await memory.set(cid, doc, "conversations", ttl=3600)
    assert await memory.get(cid, "conversations") == doc
    await memory.set("tier", "platinum tier", ttl=60)
    assert [h.key for h in await memory.search("platinum")] == ["tier"]


async def test_table_prefixes_keep_stores_apart(engine: AsyncEngine, fresh_prefix: str) -> None:
    one = SqlMemory(engine, table_prefix=fresh_prefix)
    two = SqlMemory(engine, table_prefix=fresh_prefix + "b_")
    await one.set("k", "one words")
    await two.set("k", "two words")
    assert await one.all() == {"k": "one words"}
    assert [h.value for h in await two.search("words")] == ["two words"]


async def test_column_types_fit_the_dialect(engine: AsyncEngine, fresh_prefix: str) -> None:
    await SqlMemory(engine, table_prefix=fresh_prefix).create_schema()
    tables = build_tables(fresh_prefix)

    def columns(conn: object, table: str) -> dict[str, str]:
        found = inspect(conn).get_columns(table)
        return {c["name"]: str(c["type"]).upper() for c in found}

    async with engine.connect() as conn:
        memory = await conn.run_sync(columns, tables.memory.name)
        conversations = await conn.run_sync(columns, tables.conversations.name)
        name = engine.dialect.name
        if name == "postgresql":
            assert memory["value"] == "TEXT"
            assert conversations["metadata"] == "JSONB"
            assert "TIMESTAMP" in memory["expires_at"]
            zone = (await conn.execute(text(
                "SELECT data_type, collation_name FROM information_schema.columns "
                "WHERE table_name = :t AND column_name IN ('key', 'expires_at') "
                "ORDER BY column_name DESC"), {"t": tables.memory.name})).all()
            assert [tuple(row) for row in zone] == [
                ("character varying", "C"), ("timestamp with time zone", None)]
        elif name in ("mysql", "mariadb"):
            assert memory["value"] == "LONGTEXT"
            assert memory["expires_at"].startswith("DATETIME")
            collation = (await conn.execute(text(
                "SELECT collation_name FROM information_schema.columns WHERE table_schema = "
                "DATABASE() AND table_name = :t AND column_name = 'key'"),
                {"t": tables.memory.name})).scalar_one()
            assert collation in ("utf8mb4_nopad_bin", "utf8mb4_0900_bin")
        else:
            assert memory["value"] == "TEXT"


async def test_keys_compare_exactly_and_order_like_python(
    engine: AsyncEngine, fresh_prefix: str
) -> None:
    memory = SqlMemory(engine, table_prefix=fresh_prefix)
    keys = ["a", "A", "a ", "ä", "b", "é", "🐍", "z", "Z"]
    for key in keys:
        await memory.set(key, f"same words {key}")
    assert await memory.all() == {key: f"same words {key}" for key in keys}
    # Give every entry the same recency, so the search's last tie-break (key) decides.
    table = memory.tables.memory
    async with engine.begin() as conn:
        await conn.execute(table.update().values(seq=1))
    hits = await memory.search("same words", 20)
    assert [h.key for h in hits] == sorted(keys)
