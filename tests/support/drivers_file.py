"""Conformance factories for FileMemory: ``file`` (default durability) and ``file(fsync)``.

Every driver the suite builds gets a fresh temporary directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Literal

import pytest

from claw_memory import Memory
from claw_memory.drivers.file import FileMemory
from tests.support.factories import MemoryFactory, factory


def _file_factory(
    request: pytest.FixtureRequest, durability: Literal["process", "fsync"]
) -> MemoryFactory:
    tmp = request.getfixturevalue("tmp_path_factory")

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Memory]:
        async with FileMemory(tmp.mktemp("file-memory"), durability=durability) as memory:
            yield memory

    return make


@factory("file")
def _file(request: pytest.FixtureRequest) -> MemoryFactory:
    return _file_factory(request, "process")


@factory("file(fsync)")
def _file_fsync(request: pytest.FixtureRequest) -> MemoryFactory:
    return _file_factory(request, "fsync")
