"""A Redis that goes away mid-run and comes back: prompt errors, then the same object works."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from claw_memory.drivers.redis import RedisMemory
from claw_memory.errors import DriverUnavailableError
from tests.drivers.redis.servers import RedisServer

CONNECT_TIMEOUT = 0.5
RETRIES = 2
# Each attempt is refused or times out within CONNECT_TIMEOUT; each backoff is at most 1 s.
BOUND = (RETRIES + 1) * CONNECT_TIMEOUT + RETRIES * 1.0
DEADLINE = 20.0


@pytest.fixture
def durable_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis that writes every acknowledged command to its append-only file first."""
    server = RedisServer(tmp_path / "aof", args=["--appendonly", "yes", "--appendfsync", "always"])
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Writer:
    """Sets ``w0``, ``w1``, … one after another; remembers which sets were acknowledged."""

    def __init__(self, memory: RedisMemory) -> None:
        self.memory = memory
        self.acknowledged: list[int] = []
        self.failures: list[float] = []  # how long each failed set took
        self.stop = asyncio.Event()
        self.progress = asyncio.Event()

    async def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                await self.memory.set(f"w{i}", {"n": i, "text": f"written words {i}"}, ttl=0)
            except DriverUnavailableError:
                self.failures.append(time.monotonic() - started)
            else:
                self.acknowledged.append(i)
            self.progress.set()
            i += 1
            await asyncio.sleep(0)

    async def wait(self, condition: str, predicate: Callable[[], bool]) -> None:
        end = time.monotonic() + DEADLINE
        while not predicate():
            if time.monotonic() > end:
                pytest.fail(f"writer: {condition} not reached within {DEADLINE} s")
            self.progress.clear()
            try:
                await asyncio.wait_for(self.progress.wait(), timeout=end - time.monotonic())
            except TimeoutError:
                continue


async def test_outage_fails_promptly_and_the_same_object_recovers_every_acknowledged_write(
    durable_server: RedisServer,
) -> None:
    url = f"redis://127.0.0.1:{durable_server.port}/0"
    memory = RedisMemory(url=url, connect_timeout=CONNECT_TIMEOUT, retries=RETRIES)
    writer = Writer(memory)
    task = asyncio.create_task(writer.run())
    try:
        await memory.set("before", "gold customer words", ttl=0)
        await memory.search("gold")  # the search script is loaded before the outage
        await writer.wait("50 acknowledged sets", lambda: len(writer.acknowledged) >= 50)

        await asyncio.to_thread(durable_server.stop, signal.SIGKILL)  # a crash, mid-run
        await writer.wait("3 failed sets", lambda: len(writer.failures) >= 3)
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: memory.get("before"), memory.all, lambda: memory.search("gold"),
            lambda: memory.has("before"), lambda: memory.forget("x"),
            lambda: memory.flush("other"),
        ]
        for call in calls:
            started = time.monotonic()
            with pytest.raises(DriverUnavailableError, match=f"127.0.0.1:{durable_server.port}"):
                await call()
            assert time.monotonic() - started < BOUND
        assert max(writer.failures) < BOUND

        await asyncio.to_thread(durable_server.start)  # same port, same directory
        resumed = len(writer.acknowledged)
        await writer.wait("20 sets after the restart",
                          lambda: len(writer.acknowledged) >= resumed + 20)
    finally:
        writer.stop.set()
        await task

    stored = await memory.all()
    assert stored["before"] == "gold customer words"
    for i in writer.acknowledged:
        assert stored[f"w{i}"] == {"n": i, "text": f"written words {i}"}
    # The script cache died with the server; the scripts are loaded again as needed.
    assert [h.key for h in await memory.search("gold")] == ["before"]
    assert [h.key for h in await memory.search("written words", 1)] == [list(stored)[-1]]
    await memory.aclose()


async def test_a_server_that_stops_answering_fails_within_the_command_timeout(
    private_server: RedisServer,
) -> None:
    url = f"redis://127.0.0.1:{private_server.port}/0"
    # Five retries would take (5 + 1) * 0.3 s plus backoff if each attempt had the timeout;
    # the timeout bounds the whole command, its retries included.
    async with RedisMemory(url=url, timeout=0.3, connect_timeout=0.3, retries=5) as memory:
        await memory.set("k", "kept")
        await memory.search("kept")  # every script a call below needs is loaded
        assert private_server.pid is not None
        os.kill(private_server.pid, signal.SIGSTOP)  # alive, connected, silent
        try:
            calls: list[Callable[[], Awaitable[object]]] = [
                lambda: memory.get("k"), lambda: memory.set("k", "new"), memory.all,
                lambda: memory.search("kept"), lambda: memory.has("k"),
            ]
            for call in calls:
                started = time.monotonic()
                with pytest.raises(DriverUnavailableError, match="TimeoutError"):
                    await call()
                assert time.monotonic() - started < 0.3 + 0.7
        finally:
            os.kill(private_server.pid, signal.SIGCONT)
        assert await memory.get("k") in ("kept", "new")  # the set may have reached Redis
        await memory.set("k", "again")
        assert await memory.get("k") == "again"


async def test_a_client_passed_in_keeps_its_own_timeout(private_server: RedisServer) -> None:
    client = aioredis.Redis(
        port=private_server.port, socket_timeout=0.8, retry=Retry(NoBackoff(), 0)
    )
    try:
        async with RedisMemory(client, timeout=0.1) as memory:
            await memory.set("k", "kept")
            assert private_server.pid is not None
            os.kill(private_server.pid, signal.SIGSTOP)
            try:
                started = time.monotonic()
                with pytest.raises(DriverUnavailableError, match="TimeoutError"):
                    await memory.get("k")
                assert 0.7 < time.monotonic() - started < 0.8 + 1.0
            finally:
                os.kill(private_server.pid, signal.SIGCONT)
            assert await memory.get("k") == "kept"
    finally:
        await client.aclose()
