"""Fixtures of the engine tests: the drivers conversations are stored in."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from claw_memory import ArrayMemory, Memory

STORES = ["array"]
if importlib.util.find_spec("claw_memory.drivers.file") is not None:
    STORES.append("file")
if importlib.util.find_spec("claw_memory.drivers.sql") is not None:
    STORES.append("sqlite")  # the SQL driver maps conversation documents to tables


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    """A fresh, empty memory of each kind conversations are tested over."""
    if request.param == "file":
        from claw_memory.drivers.file import FileMemory

        async with FileMemory(storage_dir=tmp_path / "memory") as memory:
            yield memory
    elif request.param == "sqlite":
        from claw_memory.drivers.sql import SqlMemory

        async with SqlMemory(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}") as memory:
            yield memory
    else:
        async with ArrayMemory() as memory:
            yield memory
