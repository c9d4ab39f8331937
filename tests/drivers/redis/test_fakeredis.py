"""The conformance suite on fakeredis: the fallback used outside CI when no Redis answers."""

from __future__ import annotations

import pytest

from claw_memory.testing import MemoryConformance
from tests.support.drivers_redis import fake_factory
from tests.support.factories import MemoryFactory


class TestRedisMemoryOnFakeredis(MemoryConformance):
    property_examples = 20

    @pytest.fixture
    def memory_factory(self) -> MemoryFactory:
        return fake_factory()
