"""Core memory drivers. ``RedisMemory`` and ``SqlMemory`` import their backends lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claw_memory.drivers.array import ArrayMemory
from claw_memory.drivers.base import MISSING, BaseMemory

if TYPE_CHECKING:
    from claw_memory.drivers.file import FileMemory
    from claw_memory.drivers.redis import RedisMemory
    from claw_memory.drivers.sql import SqlMemory

__all__ = ["MISSING", "ArrayMemory", "BaseMemory", "FileMemory", "RedisMemory", "SqlMemory"]

#: Drivers whose modules (and backends) are imported on first attribute access.
LAZY_DRIVERS = {
    "FileMemory": "claw_memory.drivers.file",
    "RedisMemory": "claw_memory.drivers.redis",
    "SqlMemory": "claw_memory.drivers.sql",
}


def __getattr__(name: str) -> Any:
    module = LAZY_DRIVERS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
