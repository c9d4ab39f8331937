"""RedisMemory's key layout, its index and its expiry, seen from inside Redis."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from redis.crc import key_slot

from claw_memory.drivers import redis as redis_driver
from claw_memory.drivers.redis import RedisMemory
from claw_memory.errors import CorruptStoreError
from claw_memory.scoring import TokenOverlapScorer

DEADLINE = 10.0


async def wait_until(predicate: Callable[[], Awaitable[bool]]) -> None:
    end = time.monotonic() + DEADLINE
    while not await predicate():
        if time.monotonic() > end:
            pytest.fail(f"condition not met within {DEADLINE} s")
        await asyncio.sleep(0.02)


async def key_names(memory: RedisMemory, pattern: str = "*") -> list[str]:
    return sorted([n.decode() async for n in memory.client.scan_iter(match=pattern)])


async def command_counts(memory: RedisMemory) -> dict[str, int]:
    stats = await memory.client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()
            if name not in ("cmdstat_info", "cmdstat_config|resetstat")}


class Sent:
    """Records the commands a client sends (each is one round trip)."""

    def __init__(self, memory: RedisMemory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        client = memory.client
        send = client.execute_command

        async def execute_command(*args: Any, **options: Any) -> Any:
            self.names.append(str(args[0]).lower())
            return await send(*args, **options)

        monkeypatch.setattr(client, "execute_command", execute_command)

    def take(self) -> list[str]:
        names, self.names = self.names, []
        return names


def hits(found: list[Any]) -> list[tuple[str, Any, float]]:
    return [(h.key, h.value, h.score) for h in found]


# -- layout -----------------------------------------------------------------------------------

async def test_every_key_of_a_namespace_is_under_its_hash_tag(
    private_memory: RedisMemory,
) -> None:
    keys = ["plain", "{braced}", "a}b{c", "x:{y}:z", "🐍"]
    for key in keys:
        await private_memory.set(key, f"gold words for {key}", "user:7")
    await private_memory.search("gold words", 5, "user:7")
    names = await key_names(private_memory)
    assert names
    assert all(name.startswith("phpclaw:{user:7}:") for name in names)
    assert {key_slot(name.encode()) for name in names} == {key_slot(b"user:7")}


async def test_the_prefix_is_configurable_and_may_not_hold_braces(
    private_server: Any,
) -> None:
    url = f"redis://127.0.0.1:{private_server.port}/0"
    async with RedisMemory(url=url, prefix="app1:") as memory:
        await memory.set("k", 1)
        assert await key_names(memory) == ["app1:{default}:o", "app1:{default}:v:k"]
    for prefix in ("a{", "b}", "{x}"):
        with pytest.raises(ValueError, match="prefix"):
            RedisMemory(url=url, prefix=prefix)


async def test_all_flush_and_search_never_walk_the_keyspace(
    private_memory: RedisMemory,
) -> None:
    client = private_memory.client
    await client.mset({f"unrelated:{i}": "gold customer" for i in range(2000)})
    for i in range(50):
        await private_memory.set(f"k{i}", f"gold customer number {i}")
    await client.config_resetstat()
    assert len(await private_memory.all()) == 50
    assert len(await private_memory.search("gold customer", 10)) == 10
    await private_memory.forget("k1")
    await private_memory.flush()
    counts = await command_counts(private_memory)
    assert not {"keys", "scan"} & set(counts), counts
    assert await client.dbsize() == 2000


async def test_each_operation_is_one_round_trip(
    memory: RedisMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    await memory.set("warm", "up")  # the first call of each script loads it
    await memory.forget("warm")
    await memory.all()
    await memory.flush()
    sent = Sent(memory, monkeypatch)
    for call, expected in (
        (lambda: memory.set("k", {"v": "some words"}, ttl=60), ["evalsha"]),
        (lambda: memory.get("k"), ["get"]),
        (lambda: memory.has("k"), ["exists"]),
        (lambda: memory.all(), ["evalsha"]),
        (lambda: memory.forget("k"), ["evalsha"]),
        (lambda: memory.flush(), ["evalsha"]),
    ):
        await call()
        assert sent.take() == expected


async def test_search_is_one_round_trip_once_the_index_is_current(
    memory: RedisMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    await memory.search("warm up", 3)  # loads the script
    for i in range(30):
        await memory.set(f"k{i}", f"alpha beta gamma {i}")
    sent = Sent(memory, monkeypatch)
    await memory.search("alpha", 3)  # the 30 new entries go out once to be tokenised
    assert sent.take() == ["evalsha", "evalsha"]
    found = await memory.search("alpha beta", 3)
    assert [h.key for h in found] == ["k29", "k28", "k27"]
    assert sent.take() == ["evalsha"]


# -- TTL ----------------------------------------------------------------------------------------

async def test_default_ttl_is_a_day_and_zero_means_never(private_server: Any) -> None:
    url = f"redis://127.0.0.1:{private_server.port}/0"
    async with RedisMemory(url=url) as memory:
        client = memory.client
        await memory.set("day", 1)
        await memory.set("never", 1, ttl=0)
        await memory.set("short", 1, ttl=2.5)
        await memory.set("tiny", 1, ttl=0.0001)
        assert 86_390_000 < await client.pttl("phpclaw:{default}:v:day") <= 86_400_000
        assert await client.pttl("phpclaw:{default}:v:never") == -1
        assert 2_000 < await client.pttl("phpclaw:{default}:v:short") <= 2_500
        assert await client.pttl("phpclaw:{default}:v:tiny") <= 1
    async with RedisMemory(url=url, default_ttl=0) as memory:
        await memory.set("forever", 1)
        assert await memory.client.pttl("phpclaw:{default}:v:forever") == -1


async def test_expired_entries_leave_the_index_when_met(private_memory: RedisMemory) -> None:
    client = private_memory.client
    for i in range(40):
        await private_memory.set(f"short{i}", f"fleeting words {i}", ttl=0.2)
    for i in range(3):
        await private_memory.set(f"long{i}", f"lasting words {i}", ttl=0)
    assert len(await private_memory.search("words", 50)) == 43  # all indexed now

    async def expired() -> bool:
        return not await client.exists("phpclaw:{default}:v:short39")

    await wait_until(expired)
    assert [h.key for h in await private_memory.search("words", 50)] == [
        "long2", "long1", "long0"]
    assert await private_memory.all() == {f"long{i}": f"lasting words {i}" for i in range(3)}
    # Nothing of the expired entries is left: recency (plus its '' member), words, word sets.
    assert await client.zcard("phpclaw:{default}:o") == 4
    assert await client.hlen("phpclaw:{default}:i") == 3
    assert await client.scard("phpclaw:{default}:t:fleeting") == 0
    assert await client.smembers("phpclaw:{default}:t:words") == {b"long0", b"long1", b"long2"}


async def test_expired_members_stay_bounded_when_a_namespace_is_only_written(
    private_memory: RedisMemory,
) -> None:
    client = private_memory.client
    for i in range(300):
        await private_memory.set(f"gone{i}", i, ttl=0.1)

    async def all_expired() -> bool:
        return not await client.exists("phpclaw:{default}:v:gone299")

    await wait_until(all_expired)
    for i in range(480):  # about 30 of these sample 32 members each
        await private_memory.set(f"live{i % 5}", i, ttl=0)
    # 300 dead members, each with a ~1/10 chance per sample round of being met: well under
    # 100 remain (the expected number is about 11); without the sampling all 300 would.
    assert await client.zcard("phpclaw:{default}:o") < 100 + 6


# -- flush ----------------------------------------------------------------------------------

async def test_flush_deletes_every_key_of_the_namespace_and_nothing_else(
    private_memory: RedisMemory,
) -> None:
    for namespace in ("a", "a:b", "ab"):
        for i in range(30):
            await private_memory.set(f"k{i}", f"some words {i}", namespace)
        await private_memory.search("words", 5, namespace)
    await private_memory.flush("a")
    assert await key_names(private_memory, "phpclaw:{a}:*") == []
    assert len(await key_names(private_memory, "phpclaw:{a:b}:*")) > 30
    assert len(await private_memory.all("ab")) == 30


async def test_flush_works_in_batches_and_keeps_entries_set_meanwhile(
    private_memory: RedisMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_driver, "_FLUSH_BATCH", 4)
    for i in range(10):
        await private_memory.set(f"old{i}", f"old words {i}")
    await private_memory.search("words", 3)
    run = private_memory._run
    calls = 0

    async def run_step(script: Any, *args: Any, keys: int = 1) -> Any:
        nonlocal calls
        result = await run(script, *args, keys=keys)
        if script is private_memory._flush_script:
            calls += 1
            if calls == 1:  # another client sets an entry while the flush is under way
                await private_memory.set("late", "late words")
        return result

    monkeypatch.setattr(private_memory, "_run", run_step)
    await private_memory.flush()
    assert calls > 2
    assert await private_memory.all() == {"late": "late words"}
    assert [h.key for h in await private_memory.search("words", 5)] == ["late"]


# -- search ---------------------------------------------------------------------------------

async def test_search_matches_token_overlap_scorer(memory: RedisMemory) -> None:
    rng = random.Random(5)
    vocabulary = ["gold", "tier", "customer", "discount", "Café", "don't", "e-mail", "ox",
                  "LISBON", "city", "percent", "true", "null", "ab", "déjà", "vu"]
    keys = [f"key{i}" for i in range(40)]
    for _ in range(150):
        key = rng.choice(keys)
        if rng.random() < 0.15:
            await memory.forget(key, "ns")
            continue
        words = rng.choices(vocabulary, k=rng.randint(0, 6))
        value: Any = " ".join(words)
        if rng.random() < 0.3:
            value = {"note": value, "n": rng.randint(0, 9), "ok": rng.random() < 0.5}
        await memory.set(key, value, "ns")
        if rng.random() < 0.2:
            query = " ".join(rng.choices(vocabulary, k=rng.randint(1, 4)))
            limit = rng.randint(1, 8)
            expected = TokenOverlapScorer.rank(await memory.all("ns"), query, limit, "ns")
            assert hits(await memory.search(query, limit, "ns")) == hits(expected), query


async def test_search_indexes_many_new_entries_over_several_round_trips(
    memory: RedisMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_driver, "_INDEX_BATCH", 7)
    for i in range(60):
        await memory.set(f"k{i}", f"entry {'even' if i % 2 == 0 else 'odd'} number {i}")
    found = await memory.search("even number", 40)
    assert hits(found) == hits(TokenOverlapScorer.rank(await memory.all(), "even number", 40))
    assert [h.score for h in found[:30]] == [2.0] * 30


async def test_entries_expired_before_they_were_indexed_do_not_hide_later_ones(
    memory: RedisMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_driver, "_INDEX_BATCH", 4)
    for i in range(10):
        await memory.set(f"gone{i}", "shared words", ttl=0.1)
    for i in range(3):
        await memory.set(f"kept{i}", "shared words", ttl=0)

    async def expired() -> bool:
        return not await memory.has("gone9")

    await wait_until(expired)
    assert [h.key for h in await memory.search("shared", 10)] == ["kept2", "kept1", "kept0"]


async def test_words_sent_for_an_entry_set_again_meanwhile_are_discarded(
    memory: RedisMemory,
) -> None:
    await memory.set("k", "alpha words")
    head: list[str | int] = [f"{memory._prefix}{{default}}:o", 5, 100, 1 << 20, 1, "alpha"]
    reply = await memory._run(memory._search_script, *head)
    assert reply[:2] == [0, b"k"]  # k goes out to be tokenised ...
    await memory.set("k", "omega words")  # ... and is set again meanwhile
    await memory._run(memory._search_script, *head, b"k", reply[2], "alpha words")
    assert await memory.search("alpha") == []
    assert [h.key for h in await memory.search("omega")] == ["k"]


async def test_search_hit_stored_at_is_when_it_was_set(memory: RedisMemory) -> None:
    before = time.time()
    await memory.set("k", "timed words")
    after = time.time()
    (hit,) = await memory.search("timed")
    assert hit.stored_at is not None
    # The server's clock: allow for a little skew against this process's clock.
    assert before - 1 <= hit.stored_at.timestamp() <= after + 1


# -- listing -----------------------------------------------------------------------------------

async def test_namespaces_and_entries_list_live_entries(private_memory: RedisMemory) -> None:
    await private_memory.set("a", 1, "one")
    await private_memory.set("b", {"x": 2}, "one", ttl=0)
    await private_memory.set("c", 3, "two", ttl=0.1)
    await private_memory.set("d", 4, "two:sub")

    async def expired() -> bool:
        return not await private_memory.has("c", "two")

    await wait_until(expired)
    assert await private_memory.namespaces() == ["one", "two:sub"]
    entries = await private_memory.entries("one")
    assert [(e.key, e.value) for e in entries] == [("a", 1), ("b", {"x": 2})]
    assert entries[1].expires_at is None
    assert entries[0].expires_at is not None
    assert entries[0].stored_at is not None
    delta = entries[0].expires_at - entries[0].stored_at
    assert 86_390 < delta.total_seconds() <= 86_401


# -- data that is not ours --------------------------------------------------------------------

async def test_a_value_that_is_not_json_is_a_corrupt_store(memory: RedisMemory) -> None:
    await memory.set("k", "fine")
    await memory.client.set(f"{memory._prefix}{{default}}:v:k", b"\xff not json")
    with pytest.raises(CorruptStoreError) as caught:
        await memory.get("k")
    assert caught.value.namespace == "default"
    with pytest.raises(CorruptStoreError):
        await memory.all()


async def test_a_key_of_another_type_is_a_corrupt_store(memory: RedisMemory) -> None:
    await memory.client.set(f"{memory._prefix}{{clash}}:o", "someone else's string")
    with pytest.raises(CorruptStoreError, match="clash"):
        await memory.set("k", 1, "clash")


async def test_restore_writes_a_namespace_run_in_one_script_call_with_exact_expiry(
    memory: RedisMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    from claw_memory.contracts import MemoryEntry

    calls: list[int] = []
    original = memory._run

    async def counting(script: Any, *args: Any, keys: int = 1) -> Any:
        calls.append(len(args))
        return await original(script, *args, keys=keys)

    monkeypatch.setattr(memory, "_run", counting)
    at = datetime.fromtimestamp(round(datetime.now(UTC).timestamp() + 600, 3), UTC)
    entries = [MemoryEntry(f"k{i}", i, "bulk", None, at) for i in range(300)]
    entries.append(MemoryEntry("other", 1, "elsewhere", None, None))
    await memory.restore(entries)
    assert len(calls) == 2  # one script call per namespace run
    listed = await memory.entries("bulk")
    assert [e.key for e in listed] == [f"k{i}" for i in range(300)]
    assert {e.expires_at for e in listed} == {at}
    assert (await memory.entries("elsewhere"))[0].expires_at is None
