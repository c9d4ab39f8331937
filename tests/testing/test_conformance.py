"""The conformance suite, run over every driver and wrapper the test support knows."""

from __future__ import annotations

import pytest

from claw_memory.testing import MemoryConformance
from tests.support import factories
from tests.support.factories import FACTORIES, MemoryFactory

assert factories  # the registry is filled on import


class TestConformance(MemoryConformance):
    @pytest.fixture(params=sorted(FACTORIES))
    def memory_factory(self, request: pytest.FixtureRequest) -> MemoryFactory:
        return FACTORIES[request.param](request)
