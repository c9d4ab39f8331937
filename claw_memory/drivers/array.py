"""``ArrayMemory``: the in-process driver, for tests, scratch space and single-process caches.

Values are kept the way the serialising drivers keep them: scalars as they are, containers as
their JSON text, decoded afresh on every read, so a caller mutating a value after ``set`` or
``get`` never changes what is stored. Each namespace keeps an expiry heap (so ``all`` and
``search`` drop expired entries without a scan) and a :class:`~claw_memory.scoring.KeywordIndex`
whose upkeep is deferred to the next search, so ``set`` stays O(1).

There is no lock and no await inside an operation: under asyncio every method runs to
completion atomically. It is not meant to be shared between threads.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from claw_memory import hooks as _hooks
from claw_memory.contracts import MemoryEntry, MemoryHit
from claw_memory.drivers.base import MISSING, BaseMemory, RestoreItem
from claw_memory.hooks import Hooks
from claw_memory.scoring import KeywordIndex, value_text
from claw_memory.validation import (
    MAX_KEY_LENGTH,
    NamespaceValidator,
    encode_json,
    normalize_ttl,
    validate_key,
    validate_search,
)

__all__ = ["ArrayMemory"]

_PLAIN = frozenset({str, int, bool, type(None)})
_monotonic = time.monotonic
_wall = time.time
_loads = json.loads

# An entry: (stored value or its JSON text, is_json, expires_at on the monotonic clock or None,
# sequence number (recency), stored_at as a UNIX timestamp).
_Entry = tuple[Any, bool, float | None, int, float]


class _Space:
    __slots__ = ("changed", "entries", "expiry", "index")

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}
        self.expiry: list[tuple[float, int, str]] = []
        self.index = KeywordIndex()
        self.changed = self.index.changed  # KeywordIndex.mark without the call

    def purge(self) -> None:
        """Drop every entry whose TTL has run out."""
        heap = self.expiry
        if not heap:
            return
        now = _monotonic()
        entries = self.entries
        while heap and heap[0][0] <= now:
            _, seq, key = heapq.heappop(heap)
            entry = entries.get(key)
            if entry is not None and entry[3] == seq:
                del entries[key]
                self.index.mark(key)
        if len(heap) > 2 * len(entries) + 64:  # overwritten TTL entries left behind
            self.expiry = [(e[2], e[3], k) for k, e in entries.items() if e[2] is not None]
            heapq.heapify(self.expiry)


class ArrayMemory(BaseMemory):
    """In-process memory. Never expires by default; lost when the process ends.

    Construct with ``default_ttl`` to give entries set without a TTL a lifetime.
    """

    driver_name = "array"

    def __init__(self, *, default_ttl: float | None = None, hooks: Hooks | None = None) -> None:
        super().__init__(default_ttl=default_ttl, hooks=hooks)
        self._spaces: dict[str, _Space] = {}
        self._seq = itertools.count(1)

    # The public methods are written out, not routed through BaseMemory's hooks: this driver's
    # whole cost is a few dict operations, and each extra call layer shows in its throughput.
    # A namespace present in ``_spaces`` was validated when it was created, and a key found in
    # it was validated when it was stored, so hits skip validation.

    def _space(self, namespace: str) -> _Space:
        space = self._spaces.get(namespace)
        if space is None:
            NamespaceValidator.validate(namespace)
            space = self._spaces[namespace] = _Space()
        return space

    def _lookup(self, namespace: str, key: str) -> _Entry | None:
        # Arguments are unvalidated here: a hit proves both valid, a miss validates them.
        try:
            space = self._spaces.get(namespace)
            entry = space.entries.get(key) if space is not None else None
        except TypeError:  # unhashable namespace or key
            space, entry = None, None
        if entry is None:
            validate_key(key)
            NamespaceValidator.validate(namespace)
            return None
        expires = entry[2]
        if expires is not None and expires <= _monotonic():
            assert space is not None
            del space.entries[key]
            space.index.mark(key)
            return None
        return entry

    async def get(self, key: str, namespace: str = "default") -> Any:
        # The hit path of _lookup, inlined: this is the driver's hottest call.
        try:
            space = self._spaces.get(namespace)
            entry = space.entries.get(key) if space is not None else None
        except TypeError:
            entry = None
        if entry is None or (entry[2] is not None and entry[2] <= _monotonic()):
            entry = self._lookup(namespace, key)
        if Hooks._subscribed:
            await _hooks.emit(
                "memory.read",
                {"key": key, "namespace": namespace, "driver": "array", "hit": entry is not None},
                self.hooks,
            )
        if entry is None:
            return None
        return _loads(entry[0]) if entry[1] else entry[0]

    async def has(self, key: str, namespace: str = "default") -> bool:
        return self._lookup(namespace, key) is not None

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        if key.__class__ is not str or not 0 < len(key) <= MAX_KEY_LENGTH or "\x00" in key:
            validate_key(key)
        try:
            space = self._spaces.get(namespace)
        except TypeError:
            space = None
        if space is None:
            space = self._space(namespace)
        cls = value.__class__
        if (
            cls is str or cls is int or cls is bool or value is None
            or (cls is float and math.isfinite(value))
        ):
            stored, is_json = value, False
        else:
            stored, is_json = encode_json(value), True
        if ttl is None and self.default_ttl is None:
            effective = None
            expires = None
        else:
            effective = normalize_ttl(ttl, self.default_ttl)
            expires = None if effective is None else _monotonic() + effective
        seq = next(self._seq)
        entries = space.entries
        entries.pop(key, None)
        entries[key] = (stored, is_json, expires, seq, _wall())
        space.changed[key] = None
        if expires is not None:
            heapq.heappush(space.expiry, (expires, seq, key))
        if Hooks._subscribed:
            await _hooks.emit(
                "memory.write",
                {"key": key, "namespace": namespace, "driver": "array", "ttl": effective},
                self.hooks,
            )

    async def forget(self, key: str, namespace: str = "default") -> None:
        validate_key(key)
        space = self._spaces.get(NamespaceValidator.validate(namespace))
        if space is not None and space.entries.pop(key, None) is not None:
            space.index.mark(key)
        if Hooks._subscribed:
            await _hooks.emit(
                "memory.forget",
                {"key": key, "namespace": namespace, "driver": "array"},
                self.hooks,
            )

    async def flush(self, namespace: str = "default") -> None:
        self._spaces.pop(NamespaceValidator.validate(namespace), None)

    async def all(self, namespace: str = "default") -> dict[str, Any]:
        space = self._spaces.get(NamespaceValidator.validate(namespace))
        if space is None:
            return {}
        space.purge()
        return {k: _loads(e[0]) if e[1] else e[0] for k, e in space.entries.items()}

    async def search(
        self, query: str, limit: int = 5, namespace: str = "default"
    ) -> list[MemoryHit]:
        NamespaceValidator.validate(namespace)
        validate_search(query, limit)
        space = self._spaces.get(namespace)
        if space is None or limit <= 0:
            return []
        space.purge()
        entries = space.entries

        def lookup(key: str) -> tuple[str, float] | None:
            entry = entries.get(key)
            if entry is None:
                return None
            return (entry[0] if entry[1] else value_text(entry[0])), entry[3]

        hits = []
        for key, score in space.index.search(query, limit, lookup):
            stored, is_json, _, _, stored_at = entries[key]
            hits.append(
                MemoryHit(
                    key,
                    _loads(stored) if is_json else stored,
                    namespace,
                    float(score),
                    datetime.fromtimestamp(stored_at, UTC),
                )
            )
        return hits

    async def namespaces(self) -> list[str]:
        names = []
        for name, space in self._spaces.items():
            space.purge()
            if space.entries:
                names.append(name)
        return sorted(names)

    async def entries(self, namespace: str = "default") -> list[MemoryEntry]:
        space = self._spaces.get(NamespaceValidator.validate(namespace))
        if space is None:
            return []
        space.purge()
        # Expiry runs on the monotonic clock; report it on the wall clock.
        offset = _wall() - _monotonic()
        return [
            MemoryEntry(
                key,
                _loads(stored) if is_json else stored,
                namespace,
                datetime.fromtimestamp(stored_at, UTC),
                None if expires is None else datetime.fromtimestamp(expires + offset, UTC),
            )
            for key, (stored, is_json, expires, _, stored_at) in space.entries.items()
        ]

    async def _restore(self, items: Sequence[RestoreItem]) -> None:
        offset = _monotonic() - _wall()  # absolute wall-clock expiry -> this driver's clock
        for item in items:
            space = self._space(item.namespace)
            value = item.value
            cls = value.__class__
            plain = cls in _PLAIN or (cls is float and math.isfinite(value))
            expires = None if item.expires_at is None else item.expires_at + offset
            seq = next(self._seq)
            space.entries.pop(item.key, None)
            space.entries[item.key] = (
                value if plain else item.encoded, not plain, expires, seq, _wall()
            )
            space.index.mark(item.key)
            if expires is not None:
                heapq.heappush(space.expiry, (expires, seq, item.key))

    # BaseMemory's hooks, for code that calls them generically.
    async def _get(self, namespace: str, key: str) -> Any:
        entry = self._lookup(namespace, key)
        return MISSING if entry is None else (_loads(entry[0]) if entry[1] else entry[0])

    async def _set(
        self, namespace: str, key: str, value: Any, encoded: str, ttl: float | None
    ) -> None:
        await self.set(key, value, namespace, ttl if ttl is not None else 0)

    async def _forget(self, namespace: str, key: str) -> None:
        await self.forget(key, namespace)

    async def _flush(self, namespace: str) -> None:
        await self.flush(namespace)

    async def _all(self, namespace: str) -> dict[str, Any]:
        return await self.all(namespace)

    async def _search(self, namespace: str, query: str, limit: int) -> list[MemoryHit]:
        return await self.search(query, limit, namespace)
