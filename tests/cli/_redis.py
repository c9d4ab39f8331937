"""A RedisMemory on a key prefix of its own, for the CLI and example tests.

On the real server (always under CI) its keys are removed afterwards; outside CI without a
server it runs on fakeredis (``tests.support.drivers_redis.shared_server_factory``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import cast

from claw_memory.drivers.redis import RedisMemory
from tests.support.drivers_redis import shared_server_factory


@contextlib.asynccontextmanager
async def isolated_redis_memory(default_ttl: float = 86400) -> AsyncIterator[RedisMemory]:
    async with shared_server_factory(default_ttl)() as memory:
        yield cast(RedisMemory, memory)
