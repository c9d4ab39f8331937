"""Search through any driver: its own ``search`` when it has one, else a ranked ``all()``."""

from __future__ import annotations

from claw_memory.contracts import Memory, MemoryHit, SearchableMemory
from claw_memory.scoring import TokenOverlapScorer
from claw_memory.validation import NamespaceValidator, validate_search

__all__ = ["search_any"]


async def search_any(memory: Memory, query: str, limit: int, namespace: str) -> list[MemoryHit]:
    """Search ``memory``, ranking its ``all()`` with :class:`TokenOverlapScorer` if needed."""
    if isinstance(memory, SearchableMemory):
        return await memory.search(query, limit, namespace)
    validate_search(query, limit)
    NamespaceValidator.validate(namespace)
    if limit <= 0:
        return []
    return TokenOverlapScorer.rank(await memory.all(namespace), query, limit, namespace)
