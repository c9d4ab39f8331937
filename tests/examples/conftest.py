"""Fixtures for the examples."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from claw_memory.drivers.redis import RedisMemory
from tests.cli._redis import isolated_redis_memory


@pytest.fixture
async def redis_memory() -> AsyncIterator[RedisMemory]:
    """A RedisMemory on a prefix of its own whose entries never expire by default."""
    async with isolated_redis_memory(default_ttl=0) as memory:
        yield memory
