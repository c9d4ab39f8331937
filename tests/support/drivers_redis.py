"""RedisMemory factories: ``redis`` (127.0.0.1:6379) and ``redis-cluster`` (started here).

Each factory call uses a key prefix of its own and removes its keys afterwards, so runs share
the server without touching anyone else's data. Without a Redis on 6379, outside CI, ``redis``
runs on fakeredis (``tests.support.services.require``). The cluster is three masters on free
loopback ports, started once per test session and stopped by PID when it ends.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator

import pytest

from claw_memory.contracts import Memory
from claw_memory.drivers.redis import RedisMemory
from tests.drivers.redis import servers
from tests.support.factories import MemoryFactory, factory
from tests.support.services import REDIS_HOST, REDIS_PORT, redis_available, require

REDIS_URL = f"redis://{REDIS_HOST}:{REDIS_PORT}/0"


def unique_prefix() -> str:
    return f"clawtest:{secrets.token_hex(6)}:"


async def remove_keys(memory: RedisMemory, prefix: str) -> None:
    """Delete every key under ``prefix`` (test clean-up; scans, as the driver never does)."""
    client = memory.client
    names = [name async for name in client.scan_iter(match=prefix + "*", count=1000)]
    for name in names:  # one by one: on a cluster the keys are in many slots
        await client.unlink(name)


def real_factory(url: str, default_ttl: float | None = 86400) -> MemoryFactory:
    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Memory]:
        prefix = unique_prefix()
        memory = RedisMemory(url=url, prefix=prefix, default_ttl=default_ttl)
        try:
            yield memory
        finally:
            try:
                await remove_keys(memory, prefix)
            finally:
                await memory.aclose()

    return make


def fake_factory(default_ttl: float | None = 86400) -> MemoryFactory:
    """RedisMemory on fakeredis, whose Lua scripting needs the ``lupa`` package."""
    pytest.importorskip("lupa", reason="fakeredis runs Lua scripts only with lupa installed")

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Memory]:
        import fakeredis

        client = fakeredis.FakeAsyncRedis()
        try:
            async with RedisMemory(
                client, prefix=unique_prefix(), default_ttl=default_ttl
            ) as memory:
                yield memory
        finally:
            await client.aclose()

    return make


def shared_server_factory(default_ttl: float | None = 86400) -> MemoryFactory:
    """RedisMemory on 127.0.0.1:6379, or on fakeredis when no server answers outside CI."""
    if require("redis", redis_available(), "fakeredis"):
        return real_factory(REDIS_URL, default_ttl)
    return fake_factory(default_ttl)


@factory("redis")
def _redis(request: pytest.FixtureRequest) -> MemoryFactory:
    return shared_server_factory()


@factory("redis-cluster")
def _redis_cluster(request: pytest.FixtureRequest) -> MemoryFactory:
    return real_factory(servers.shared_cluster(request.config).url)
