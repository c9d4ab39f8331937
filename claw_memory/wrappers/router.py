"""``RouterMemory``: send each namespace to the driver that should hold it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from claw_memory.contracts import Memory, MemoryEntry, MemoryHit, SearchableMemory
from claw_memory.drivers.base import prepare_restore
from claw_memory.wrappers._search import entries_any, namespaces_any, restore_any, search_any

__all__ = ["RouterMemory"]


class RouterMemory(SearchableMemory):
    """Routes every call by exact namespace match; unrouted namespaces go to ``default``.

    ``RouterMemory(FileMemory(), routes={"conversations": RedisMemory()})`` keeps
    conversations in Redis and everything else in files. The router validates nothing itself:
    the driver it routes to does. ``search`` goes to the routed driver, ranking its ``all()``
    when that driver has no ``search``. :meth:`aclose` closes every distinct driver once.
    """

    __slots__ = ("_default", "_routes")

    def __init__(self, default: Memory, routes: Mapping[str, Memory] | None = None) -> None:
        if not isinstance(default, Memory):
            raise TypeError("default must be a Memory")
        for namespace, driver in (routes or {}).items():
            if not isinstance(driver, Memory):
                raise TypeError(f"route {namespace!r} must map to a Memory")
        self._default = default
        self._routes: dict[str, Memory] = dict(routes or {})

    def driver_for(self, namespace: str) -> Memory:
        """The driver that holds ``namespace``."""
        try:
            return self._routes.get(namespace, self._default)
        except TypeError:  # unhashable: let the default driver reject it
            return self._default

    def routes(self) -> dict[str, Memory]:
        """A copy of the namespace-to-driver routes."""
        return dict(self._routes)

    def default_driver(self) -> Memory:
        """The driver of every namespace without a route."""
        return self._default

    async def get(self, key: str, namespace: str = "default") -> Any:
        return await self.driver_for(namespace).get(key, namespace)

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        await self.driver_for(namespace).set(key, value, namespace, ttl)

    async def forget(self, key: str, namespace: str = "default") -> None:
        await self.driver_for(namespace).forget(key, namespace)

    async def flush(self, namespace: str = "default") -> None:
        await self.driver_for(namespace).flush(namespace)

    async def all(self, namespace: str = "default") -> dict[str, Any]:
        return await self.driver_for(namespace).all(namespace)

    async def has(self, key: str, namespace: str = "default") -> bool:
        return await self.driver_for(namespace).has(key, namespace)

    async def search(
        self, query: str, limit: int = 5, namespace: str = "default"
    ) -> list[MemoryHit]:
        return await search_any(self.driver_for(namespace), query, limit, namespace)

    async def namespaces(self) -> list[str]:
        """Namespaces with entries, each taken from the driver it routes to."""
        found = {
            ns for ns in await namespaces_any(self._default) if ns not in self._routes
        }
        for namespace, driver in self._routes.items():
            if namespace in await namespaces_any(driver):
                found.add(namespace)
        return sorted(found)

    async def entries(self, namespace: str = "default") -> list[MemoryEntry]:
        return await entries_any(self.driver_for(namespace), namespace)

    async def restore(self, entries: Sequence[MemoryEntry]) -> None:
        """Restore each run of consecutive entries through the driver of its namespace."""
        prepare_restore(entries)  # every entry is checked before any driver writes
        runs: list[tuple[Memory, list[MemoryEntry]]] = []
        for entry in entries:
            target = self.driver_for(entry.namespace)
            if runs and runs[-1][0] is target:
                runs[-1][1].append(entry)
            else:
                runs.append((target, [entry]))
        for driver, run in runs:
            await restore_any(driver, run)

    async def aclose(self) -> None:
        seen: set[int] = set()
        for driver in (self._default, *self._routes.values()):
            if id(driver) not in seen:
                seen.add(id(driver))
                await driver.aclose()
