"""``PrivacyAwareMemory``: a switch that turns message storage off without changing code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from claw_memory.contracts import Memory, MemoryEntry, MemoryHit, SearchableMemory
from claw_memory.drivers.base import prepare_restore
from claw_memory.validation import NamespaceValidator, normalize_ttl, validate_key, validate_value
from claw_memory.wrappers._search import entries_any, namespaces_any, restore_any, search_any

__all__ = ["PrivacyAwareMemory"]


class PrivacyAwareMemory(SearchableMemory):
    """Drops every ``set`` while ``store_messages`` is false; everything else passes through.

    Reads, ``forget``, ``flush`` and ``search`` reach the inner driver unchanged, so data
    stored earlier stays readable and erasable. A dropped ``set`` still rejects bad input with
    the same errors a stored one would, so code behaves the same whichever way the switch is.
    ``aclose`` closes the inner driver.
    """

    __slots__ = ("inner", "store_messages")

    def __init__(self, inner: Memory, store_messages: bool = False) -> None:
        if not isinstance(inner, Memory):
            raise TypeError("inner must be a Memory")
        self.inner = inner
        self.store_messages = bool(store_messages)

    async def get(self, key: str, namespace: str = "default") -> Any:
        return await self.inner.get(key, namespace)

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        if self.store_messages:
            await self.inner.set(key, value, namespace, ttl)
            return
        validate_key(key)
        NamespaceValidator.validate(namespace)
        normalize_ttl(ttl, None)
        validate_value(value)

    async def forget(self, key: str, namespace: str = "default") -> None:
        await self.inner.forget(key, namespace)

    async def flush(self, namespace: str = "default") -> None:
        await self.inner.flush(namespace)

    async def all(self, namespace: str = "default") -> dict[str, Any]:
        return await self.inner.all(namespace)

    async def has(self, key: str, namespace: str = "default") -> bool:
        return await self.inner.has(key, namespace)

    async def search(
        self, query: str, limit: int = 5, namespace: str = "default"
    ) -> list[MemoryHit]:
        return await search_any(self.inner, query, limit, namespace)

    async def namespaces(self) -> list[str]:
        return await namespaces_any(self.inner)

    async def entries(self, namespace: str = "default") -> list[MemoryEntry]:
        return await entries_any(self.inner, namespace)

    async def restore(self, entries: Sequence[MemoryEntry]) -> None:
        """Restore through the inner driver, or validate and drop like ``set``."""
        if self.store_messages:
            await restore_any(self.inner, entries)
        else:
            prepare_restore(entries)

    async def aclose(self) -> None:
        await self.inner.aclose()
