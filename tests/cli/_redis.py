"""A RedisMemory on a key prefix of its own, for the CLI and example tests.

On the real server (always under CI) its keys are removed afterwards; outside CI without a
server it runs on fakeredis (``tests.support.services.require``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from claw_memory.drivers.redis import RedisMemory
from tests.support.drivers_redis import REDIS_URL, remove_keys, unique_prefix
from tests.support.services import redis_available, require


@contextlib.asynccontextmanager
async def isolated_redis_memory(default_ttl: float = 86400) -> AsyncIterator[RedisMemory]:
    prefix = unique_prefix()
    if require("redis", redis_available(), "fakeredis"):
        memory = RedisMemory(url=REDIS_URL, prefix=prefix, default_ttl=default_ttl)
        try:
            yield memory
        finally:
            try:
                await remove_keys(memory, prefix)
            finally:
                await memory.aclose()
        return
    import fakeredis

    client = fakeredis.FakeAsyncRedis()
    try:
        async with RedisMemory(client, prefix=prefix, default_ttl=default_ttl) as memory:
            yield memory
    finally:
        await client.aclose()
