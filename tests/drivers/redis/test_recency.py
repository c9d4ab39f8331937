"""Recency never goes backwards, even when the server's clock is behind the recencies so far."""

from __future__ import annotations

from typing import Any, cast

from claw_memory.drivers.redis import RedisMemory


async def test_sets_stay_ahead_of_every_recency_handed_out_when_the_clock_is_behind(
    memory: RedisMemory,
) -> None:
    client = memory.client
    recency = memory._recency("clock")
    await memory.set("first", "alpha words", "clock")
    assert [hit.key for hit in await memory.search("alpha", 5, "clock")] == ["first"]
    # As if the clock had run an hour ahead and then stepped back: the highest recency handed
    # out (and the index mark behind it) lies an hour past the server's clock.
    ahead = float((await client.zscore(recency, "first")) or 0) + 3_600_000_000
    await client.zadd(recency, {"first": ahead, "": ahead})
    await client.set(recency[:-1] + "w", int(ahead))
    for key in ("second", "third", "first", "second"):
        await memory.set(key, f"{key} beta words", "clock")
    pairs = await client.zrange(recency, 0, -1, withscores=True)
    scores: dict[Any, float] = dict(cast("list[tuple[bytes, float]]", pairs))
    # One microsecond apart, in the order of the sets ("second" was set first, then again).
    assert scores[b"third"] == ahead + 2
    assert scores[b"first"] == ahead + 3
    assert scores[b"second"] == ahead + 4
    assert scores[b""] == ahead + 4
    assert list(await memory.all("clock")) == ["third", "first", "second"]
    # Every one of them is still ahead of the index mark, so a search indexes and finds them.
    found = await memory.search("beta", 5, "clock")
    assert [hit.key for hit in found] == ["second", "first", "third"]
    await memory.flush("clock")
