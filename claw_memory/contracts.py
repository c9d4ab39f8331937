"""The memory contract: :class:`Memory`, :class:`SearchableMemory` and :class:`MemoryHit`.

Every driver and wrapper of claw_memory implements :class:`SearchableMemory`; users implement
either type for their own stores and pass them to the engine without registering them. The
rules below hold on every core driver, and the conformance suite in
:mod:`claw_memory.testing` checks them for any implementation.

Keys
    A non-empty ``str`` of at most 255 characters with no NUL byte, else
    :class:`~claw_memory.errors.InvalidKeyError` (:class:`~claw_memory.errors.KeyTypeError` for a
    non-``str``). Case-sensitive; any other character is allowed.

Values
    JSON-compatible: ``None``, ``bool``, ``int``, finite ``float``, ``str``, ``list`` (or
    ``tuple``, which comes back as a ``list``) and ``dict`` with ``str`` keys, nested. Anything
    else raises :class:`~claw_memory.errors.InvalidValueError` before anything is written.
    What :meth:`Memory.get` returns equals what was set and belongs to the caller: mutating it,
    or the object that was set, never changes what is stored.

Namespaces
    Validated on every call by :class:`~claw_memory.validation.NamespaceValidator`. Namespaces
    are always kept apart: ``user:1``, ``user.1`` and ``user_1`` are three namespaces, and
    ``all("a")`` never returns entries of ``a:b``.

TTL
    Seconds as ``int`` or ``float``. ``None`` takes the driver's default (never expire for
    ``ArrayMemory``, ``FileMemory`` and ``SqlMemory``; one day for ``RedisMemory``); ``0``
    never expires; a positive number expires after that long. Negative, NaN, infinite or
    ``bool`` TTLs raise :class:`~claw_memory.errors.InvalidTTLError`. An expired entry is
    invisible to ``get``, ``has``, ``all`` and ``search`` from the moment it expires.

Errors
    Backend failures are raised as :class:`~claw_memory.errors.DriverUnavailableError`, data
    that cannot be read back as :class:`~claw_memory.errors.CorruptStoreError`, both chained
    to the backend's exception.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from claw_memory._closing import AsyncClosing

__all__ = [
    "InspectableMemory",
    "Memory",
    "MemoryEntry",
    "MemoryHit",
    "RestorableMemory",
    "SearchableMemory",
]


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One search result.

    ``stored_at`` is when the entry was last set, timezone-aware UTC (core drivers fill it;
    ``None`` when a driver cannot tell).
    """

    key: str
    value: Any
    namespace: str
    score: float
    stored_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One stored entry with its bookkeeping, as :class:`InspectableMemory` lists it.

    ``stored_at`` and ``expires_at`` are timezone-aware UTC; ``expires_at`` is ``None`` for an
    entry that never expires.
    """

    key: str
    value: Any
    namespace: str
    stored_at: datetime | None
    expires_at: datetime | None


class Memory(AsyncClosing, ABC):
    """An async key-value store with namespaces and TTLs. See the module docstring for rules.

    Subclasses implement the six data methods. :meth:`aclose` releases what the driver owns;
    a driver is an async context manager that closes itself on exit.
    """

    __slots__ = ()

    @abstractmethod
    async def get(self, key: str, namespace: str = "default") -> Any:
        """Return the value stored under ``key``, or ``None`` when absent or expired.

        A stored ``None`` also returns ``None``; use :meth:`has` to tell the two apart.
        """

    @abstractmethod
    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        """Store ``value`` under ``key``, replacing any previous value.

        The entry becomes the newest of its namespace (last in :meth:`all`), even when it
        overwrote an existing one. ``ttl`` follows the TTL rules of the contract.
        """

    @abstractmethod
    async def forget(self, key: str, namespace: str = "default") -> None:
        """Remove ``key``. Removing an absent key is not an error."""

    @abstractmethod
    async def flush(self, namespace: str = "default") -> None:
        """Remove every entry of ``namespace``, and of no other namespace."""

    @abstractmethod
    async def all(self, namespace: str = "default") -> dict[str, Any]:
        """Return the live entries of ``namespace`` as a new dict, oldest stored first."""

    @abstractmethod
    async def has(self, key: str, namespace: str = "default") -> bool:
        """Whether ``key`` holds a live entry. A stored ``None`` counts as present."""

    async def aclose(self) -> None:
        """Release what the driver owns (connections, engines, file handles).

        A driver built from a URL owns its client and closes it here; one handed a client by
        the caller leaves it open. Calling it twice is harmless.
        """


class SearchableMemory(Memory):
    """A :class:`Memory` that can rank its entries against a text query."""

    __slots__ = ()

    @abstractmethod
    async def search(
        self, query: str, limit: int = 5, namespace: str = "default"
    ) -> list[MemoryHit]:
        """Return at most ``limit`` hits of ``namespace`` for ``query``, best first.

        Core drivers score with :class:`~claw_memory.scoring.TokenOverlapScorer`: the number of
        distinct query keywords among the value's keywords, ties broken by most recently stored
        then key ascending. A score of 0 is never a hit; ``limit <= 0`` returns ``[]``.
        The namespace is validated even then.
        """


@runtime_checkable
class InspectableMemory(Protocol):
    """Optional: a driver that can list its namespaces and entries with their expiry.

    Every core driver and wrapper implements it; the ``claw-memory`` export, ``ls`` and
    ``import`` commands use it to copy stores exactly, TTLs included.
    """

    async def namespaces(self) -> list[str]:
        """Every namespace holding at least one live entry, sorted."""
        ...

    async def entries(self, namespace: str = "default") -> list[MemoryEntry]:
        """The live entries of ``namespace``, oldest stored first."""
        ...


@runtime_checkable
class RestorableMemory(Protocol):
    """Optional: a driver that writes entries with absolute expiry times, in bulk.

    ``restore(entries)`` stores each entry as ``set`` would, in order (each becomes the newest
    of its namespace), expiring at ``entry.expires_at`` (``None``: never, whatever the driver's
    default TTL; a moment already past: the entry is skipped). ``entry.stored_at`` is ignored.
    Every entry is validated before any is written. Core drivers write the whole batch in one
    locked operation, round trip or transaction. ``claw-memory import`` uses it, so an export
    of the target equals the file it was imported from, expiry times included.
    """

    async def restore(self, entries: Sequence[MemoryEntry]) -> None:
        """Write ``entries`` with their absolute expiry times."""
        ...
