"""Reach any driver: its own ``search``/``entries`` when it has them, else ``all()``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from claw_memory.contracts import (
    InspectableMemory,
    Memory,
    MemoryEntry,
    MemoryHit,
    RestorableMemory,
    SearchableMemory,
)
from claw_memory.errors import MemoryException
from claw_memory.scoring import TokenOverlapScorer
from claw_memory.validation import NamespaceValidator, validate_search

__all__ = ["entries_any", "namespaces_any", "restore_any", "search_any"]


async def search_any(memory: Memory, query: str, limit: int, namespace: str) -> list[MemoryHit]:
    """Search ``memory``, ranking its ``all()`` with :class:`TokenOverlapScorer` if needed."""
    if isinstance(memory, SearchableMemory):
        return await memory.search(query, limit, namespace)
    validate_search(query, limit)
    NamespaceValidator.validate(namespace)
    if limit <= 0:
        return []
    return TokenOverlapScorer.rank(await memory.all(namespace), query, limit, namespace)


async def entries_any(memory: Memory, namespace: str) -> list[MemoryEntry]:
    """``memory.entries`` when it has it, else its ``all()`` with unknown times."""
    if isinstance(memory, InspectableMemory):
        return await memory.entries(namespace)
    return [
        MemoryEntry(key, value, namespace, None, None)
        for key, value in (await memory.all(namespace)).items()
    ]


async def namespaces_any(memory: Memory) -> list[str]:
    """``memory.namespaces()``, or a clear error for a driver that cannot list them."""
    if isinstance(memory, InspectableMemory):
        return await memory.namespaces()
    raise MemoryException(f"{type(memory).__name__} cannot list its namespaces")


async def restore_any(memory: Memory, entries: Sequence[MemoryEntry]) -> None:
    """``memory.restore`` when it has it, else ``set`` with the TTL left at each write."""
    if isinstance(memory, RestorableMemory):
        await memory.restore(entries)
        return
    for entry in entries:
        ttl: float = 0
        if entry.expires_at is not None:
            ttl = entry.expires_at.timestamp() - time.time()
            if ttl <= 0:
                continue
        await memory.set(entry.key, entry.value, entry.namespace, ttl)
