"""``BaseMemory``: the shared half of every core driver.

It validates arguments, encodes values to JSON once, applies the TTL rules, fires the
``memory.*`` events and translates backend exceptions, then calls a handful of ``_hooks`` that
a driver module implements for its backend alone. Custom drivers may subclass it too; they
then get the whole contract's argument handling for free.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Final

from claw_memory import hooks as _hooks
from claw_memory.contracts import MemoryEntry, MemoryHit, SearchableMemory
from claw_memory.errors import ClawMemoryError, DriverUnavailableError, InvalidValueError
from claw_memory.hooks import Hooks
from claw_memory.validation import (
    NamespaceValidator,
    encode_json,
    normalize_ttl,
    validate_key,
    validate_search,
)

__all__ = ["MISSING", "BaseMemory", "RestoreItem"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: Returned by :meth:`BaseMemory._get` when a key is absent or expired.
MISSING: Final[Any] = _Missing()


@dataclass(frozen=True, slots=True)
class RestoreItem:
    """One validated entry for :meth:`BaseMemory._restore`.

    ``expires_at`` is a UNIX time in seconds (``None``: never expires); ``encoded`` is the
    value's compact JSON text.
    """

    namespace: str
    key: str
    value: Any
    encoded: str
    expires_at: float | None


class BaseMemory(SearchableMemory):
    """Template for drivers: public methods validate and fire events, ``_hooks`` do the I/O.

    Subclasses set ``driver_name`` (used in events and errors), ``backend_errors`` (exceptions
    of their backend that mean "unavailable") and implement the ``_`` methods, which receive
    validated arguments.
    """

    driver_name: ClassVar[str] = "custom"
    backend_errors: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init__(self, *, default_ttl: float | None = None, hooks: Hooks | None = None) -> None:
        self.default_ttl: float | None = normalize_ttl(default_ttl, None)
        self.hooks = hooks

    # -- the hooks a driver implements -------------------------------------------------------
    @abstractmethod
    async def _get(self, namespace: str, key: str) -> Any:
        """The stored value, or :data:`MISSING`."""

    @abstractmethod
    async def _set(
        self, namespace: str, key: str, value: Any, encoded: str, ttl: float | None
    ) -> None:
        """Store ``value`` (already validated; ``encoded`` is its JSON text)."""

    @abstractmethod
    async def _forget(self, namespace: str, key: str) -> None: ...

    @abstractmethod
    async def _flush(self, namespace: str) -> None: ...

    @abstractmethod
    async def _all(self, namespace: str) -> dict[str, Any]: ...

    async def _has(self, namespace: str, key: str) -> bool:
        return await self._get(namespace, key) is not MISSING

    @abstractmethod
    async def _search(self, namespace: str, query: str, limit: int) -> list[MemoryHit]: ...

    async def _restore(self, items: Sequence[RestoreItem]) -> None:
        """Write validated entries with absolute expiry times.

        This default goes through :meth:`_set` with the TTL left at the moment of each write,
        so expiry lands up to that write's latency late; drivers override it to be exact and to
        write the batch at once.
        """
        for item in items:
            ttl = None
            if item.expires_at is not None:
                ttl = item.expires_at - time.time()
                if ttl <= 0:
                    continue
            await self._set(item.namespace, item.key, item.value, item.encoded, ttl)

    async def _emit_write(self, key: str, namespace: str, ttl: float | None) -> None:
        """Fire ``memory.write`` (callers check :func:`claw_memory.hooks.active` first)."""
        await _hooks.emit(
            "memory.write",
            {"key": key, "namespace": namespace, "driver": self.driver_name, "ttl": ttl},
            self.hooks,
        )

    def describe_error(self, exc: BaseException) -> str:
        """A safe one-line description of a backend error (no credentials, no values)."""
        return type(exc).__name__

    # -- the contract ------------------------------------------------------------------------
    def _unavailable(self, op: str, namespace: str | None, exc: BaseException) -> ClawMemoryError:
        where = f" in namespace {namespace!r}" if namespace is not None else ""
        return DriverUnavailableError(
            f"{self.driver_name} memory could not {op}{where}: {self.describe_error(exc)}",
            driver=self.driver_name,
        )

    async def get(self, key: str, namespace: str = "default") -> Any:
        validate_key(key)
        NamespaceValidator.validate(namespace)
        try:
            value = await self._get(namespace, key)
        except self.backend_errors as exc:
            raise self._unavailable("get", namespace, exc) from exc
        if _hooks.active():
            await _hooks.emit(
                "memory.read",
                {"key": key, "namespace": namespace, "driver": self.driver_name,
                 "hit": value is not MISSING},
                self.hooks,
            )
        return None if value is MISSING else value

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        validate_key(key)
        NamespaceValidator.validate(namespace)
        effective = normalize_ttl(ttl, self.default_ttl)
        encoded = encode_json(value)
        try:
            await self._set(namespace, key, value, encoded, effective)
        except self.backend_errors as exc:
            raise self._unavailable("set", namespace, exc) from exc
        if _hooks.active():
            await self._emit_write(key, namespace, effective)

    async def forget(self, key: str, namespace: str = "default") -> None:
        validate_key(key)
        NamespaceValidator.validate(namespace)
        try:
            await self._forget(namespace, key)
        except self.backend_errors as exc:
            raise self._unavailable("forget", namespace, exc) from exc
        if _hooks.active():
            await _hooks.emit(
                "memory.forget",
                {"key": key, "namespace": namespace, "driver": self.driver_name},
                self.hooks,
            )

    async def flush(self, namespace: str = "default") -> None:
        NamespaceValidator.validate(namespace)
        try:
            await self._flush(namespace)
        except self.backend_errors as exc:
            raise self._unavailable("flush", namespace, exc) from exc

    async def all(self, namespace: str = "default") -> dict[str, Any]:
        NamespaceValidator.validate(namespace)
        try:
            return await self._all(namespace)
        except self.backend_errors as exc:
            raise self._unavailable("read all entries", namespace, exc) from exc

    async def has(self, key: str, namespace: str = "default") -> bool:
        validate_key(key)
        NamespaceValidator.validate(namespace)
        try:
            return await self._has(namespace, key)
        except self.backend_errors as exc:
            raise self._unavailable("check", namespace, exc) from exc

    async def restore(self, entries: Sequence[MemoryEntry]) -> None:
        """Write ``entries`` with their absolute expiry times (see ``RestorableMemory``)."""
        items = prepare_restore(entries)
        if not items:
            return
        try:
            await self._restore(items)
        except self.backend_errors as exc:
            raise self._unavailable("restore", None, exc) from exc
        if _hooks.active():
            now = time.time()
            for item in items:
                left = None if item.expires_at is None else max(0.0, item.expires_at - now)
                await self._emit_write(item.key, item.namespace, left)

    async def search(
        self, query: str, limit: int = 5, namespace: str = "default"
    ) -> list[MemoryHit]:
        NamespaceValidator.validate(namespace)
        validate_search(query, limit)
        if limit <= 0:
            return []
        try:
            return await self._search(namespace, query, limit)
        except self.backend_errors as exc:
            raise self._unavailable("search", namespace, exc) from exc


def prepare_restore(entries: Sequence[MemoryEntry]) -> list[RestoreItem]:
    """Validate every entry (raising before anything is written) and drop expired ones."""
    if not isinstance(entries, Sequence):
        raise InvalidValueError("restore takes a sequence of MemoryEntry")
    now = time.time()
    items = []
    for entry in entries:
        if not isinstance(entry, MemoryEntry):
            raise InvalidValueError(f"restore takes MemoryEntry items, not {type(entry).__name__}")
        validate_key(entry.key)
        NamespaceValidator.validate(entry.namespace)
        encoded = encode_json(entry.value)
        expires = entry.expires_at
        if expires is not None:
            if not isinstance(expires, datetime) or expires.tzinfo is None:
                raise InvalidValueError("expires_at must be a timezone-aware datetime or None")
            moment = expires.timestamp()
            if moment <= now:
                continue
            items.append(RestoreItem(entry.namespace, entry.key, entry.value, encoded, moment))
        else:
            items.append(RestoreItem(entry.namespace, entry.key, entry.value, encoded, None))
    return items
