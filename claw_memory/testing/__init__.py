"""Test kit for memory drivers: the conformance suite every core driver passes.

Authors of a driver subclass :class:`MemoryConformance` in their own tests and provide one
fixture, ``memory_factory``: a zero-argument callable returning an async context manager that
yields a fresh, empty, isolated driver (a new key prefix, database or directory each time)::

    import contextlib, pytest
    from claw_memory.testing import MemoryConformance

    class TestMyMemory(MemoryConformance):
        @pytest.fixture
        def memory_factory(self):
            @contextlib.asynccontextmanager
            async def make():
                async with MyMemory(...) as memory:
                    yield memory
            return make

The suite needs ``pytest``, ``pytest-asyncio`` (``asyncio_mode = "auto"``) and ``hypothesis``:
``pip install "claw-memory[testing]"``.
"""

from claw_memory.testing.conformance import MemoryConformance, ReferenceMemory

__all__ = ["MemoryConformance", "ReferenceMemory"]
