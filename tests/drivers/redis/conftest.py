"""Fixtures for the RedisMemory tests: a driver on the shared Redis, and private servers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import cast

import pytest

from claw_memory.drivers.redis import RedisMemory
from tests.drivers.redis.servers import RedisServer
from tests.support.drivers_redis import shared_server_factory


@pytest.fixture
async def memory() -> AsyncIterator[RedisMemory]:
    """A RedisMemory on 127.0.0.1:6379 under a prefix of its own (fakeredis outside CI)."""
    async with shared_server_factory()() as memory:
        yield cast(RedisMemory, memory)


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test alone, on a free loopback port."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def private_memory(private_server: RedisServer) -> AsyncIterator[RedisMemory]:
    """A RedisMemory on :func:`private_server`, whose keyspace and statistics are its own."""
    async with RedisMemory(url=f"redis://127.0.0.1:{private_server.port}/0") as memory:
        yield memory
