"""SqlMemory beyond the conformance suite: SQL search, errors, ownership, recency."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import QueuePool

from claw_memory.drivers import sql as sql_module
from claw_memory.drivers.sql import SqlMemory
from claw_memory.errors import DriverUnavailableError
from claw_memory.scoring import TokenOverlapScorer

WORDS = ["gold", "tier", "customer", "discount", "Café", "don't", "e-mail", "ab", "x" * 150,
         "y" * 150, "Straße", "STRASSE", "über", "lisbon", "parcel", "locker"]


def pooled(engine: AsyncEngine) -> int:
    """Connections resting in the engine's pool."""
    pool = engine.pool
    assert isinstance(pool, QueuePool)
    return pool.checkedin()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_search_in_sql_matches_the_token_overlap_scorer(memory: SqlMemory) -> None:
    rng = random.Random(5)
    for step in range(300):
        key = f"k{rng.randrange(60)}"
        action = rng.random()
        if action < 0.1:
            await memory.forget(key, "s")
        elif action < 0.2:
            await memory.set(key, {"note": " ".join(rng.choices(WORDS, k=4)), "n": step}, "s")
        else:
            await memory.set(key, " ".join(rng.choices(WORDS, k=rng.randrange(1, 6))), "s")
        if step % 25 == 0:
            await memory.search("gold", 3, "s")  # indexes as it goes
    everything = await memory.all("s")
    for _ in range(30):
        query = " ".join(rng.choices(WORDS, k=rng.randrange(1, 5)))
        limit = rng.randrange(1, 12)
        expected = TokenOverlapScorer.rank(everything, query, limit, "s")
        got = await memory.search(query, limit, "s")
        assert [(h.key, h.value, h.score) for h in got] == [
            (h.key, h.value, h.score) for h in expected
        ], query


async def test_search_counts_keywords_kept_in_the_words_table(memory: SqlMemory) -> None:
    words = memory.tables.words
    await memory.set("a", "Gold tier customer, gold!")
    await memory.set("b", "z" * 300)
    assert [h.key for h in await memory.search("customer")] == ["a"]
    async with memory.engine.connect() as conn:
        rows = (await conn.execute(
            select(words.c.key, words.c.word).order_by(words.c.key, words.c.word))).all()
    assert [(k, w) for k, w in rows if k == "a"] == [
        ("a", "customer"), ("a", "gold"), ("a", "tier")]
    assert [len(w) for k, w in rows if k == "b"] == [100]  # a long word is folded to fit
    assert [h.key for h in await memory.search("z" * 300)] == ["b"]
    assert await memory.search("z" * 299) == []
    await memory.forget("a")
    async with memory.engine.connect() as conn:
        left = (await conn.execute(select(func.count()).select_from(words).where(
            words.c.key == "a"))).scalar_one()
    assert left == 0


async def test_purge_expired_deletes_expired_rows_and_their_words(memory: SqlMemory) -> None:
    await memory.set("short", "fleeting words", ttl=0.05)
    await memory.set("long", "lasting words", ttl=3600)
    await memory.search("words")
    async with memory.engine.begin() as conn:  # expire it now rather than wait
        table = memory.tables.memory
        await conn.execute(table.update().where(table.c.key == "short").values(
            expires_at=table.c.created_at))
    await memory.purge_expired()
    async with memory.engine.connect() as conn:
        keys = set((await conn.execute(select(memory.tables.words.c.key))).scalars())
        stored = set((await conn.execute(select(memory.tables.memory.c.key))).scalars())
    assert keys == stored == {"long"}


def test_two_sets_in_one_clock_tick_still_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)
    first, second, third = (sql_module._next_seq() for _ in range(3))
    assert first < second < third


@pytest.mark.parametrize("scheme", ["postgresql+asyncpg", "mysql+asyncmy"])
async def test_unreachable_server_raises_driver_unavailable_without_credentials(
    scheme: str,
) -> None:
    port = closed_port()
    memory = SqlMemory(f"{scheme}://admin:s3cr3t-pw@127.0.0.1:{port}/appdb")
    for call in (memory.get("k"), memory.set("k", "secret value"), memory.search("words")):
        with pytest.raises(DriverUnavailableError) as caught:
            await call
        message = str(caught.value)
        assert "s3cr3t" not in message
        assert "admin" not in message
        assert f"127.0.0.1:{port}" in message
        assert isinstance(caught.value.__cause__, (SQLAlchemyError, OSError))
    await memory.aclose()


async def test_sql_errors_are_translated_without_statement_or_values(
    database_url: str, fresh_prefix: str
) -> None:
    engine = create_async_engine(database_url)
    memory = SqlMemory(engine, table_prefix=fresh_prefix)
    await memory.set("k", "v")
    async with engine.begin() as conn:  # break the store under the driver
        await conn.execute(text(f"DROP TABLE {memory.tables.memory.name}"))
    for call in (memory.set("k", "the secret value"), memory.get("k"), memory.all()):
        with pytest.raises(DriverUnavailableError) as caught:
            await call
        message = str(caught.value)
        assert "secret" not in message
        assert "SELECT" not in message
        assert "INSERT" not in message
        assert engine.dialect.name in message
    await engine.dispose()


def test_bad_urls_and_prefixes_are_rejected_clearly() -> None:
    with pytest.raises(DriverUnavailableError, match="URL") as caught:
        SqlMemory("not a url ://user:pw@")
    assert "pw" not in str(caught.value)
    with pytest.raises(DriverUnavailableError, match="install"):
        SqlMemory("sqlite+nosuchdriver:///x.db")
    with pytest.raises(ValueError, match="table_prefix"):
        SqlMemory("sqlite+aiosqlite://", table_prefix="bad-prefix;")


async def test_a_given_engine_is_left_open_and_an_owned_one_is_disposed(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'own.db'}"
    engine = create_async_engine(url)
    async with SqlMemory(engine) as memory:
        await memory.set("k", 1)
    assert pooled(engine) == 1  # its pooled connection is still there
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM phpclaw_memory"))).scalar() == 1
    await engine.dispose()
    async with SqlMemory(url) as owned:
        assert await owned.get("k") == 1
        assert pooled(owned.engine) == 1
    assert pooled(owned.engine) == 0
    await owned.aclose()  # twice is harmless


async def test_in_memory_sqlite_url_keeps_one_database() -> None:
    async with SqlMemory("sqlite+aiosqlite://") as memory:
        await memory.set("k", {"v": 1})
        assert await memory.get("k") == {"v": 1}
        assert [h.key for h in await memory.search("")] == []


def test_importing_claw_memory_does_not_import_sqlalchemy() -> None:
    code = "import sys, claw_memory; sys.exit('sqlalchemy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
