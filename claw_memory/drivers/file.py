"""``FileMemory``: JSON-lines files on the local disk, safe across processes and crashes.

Each namespace keeps, under ``storage_dir``, a compacted snapshot and an append-only journal
(JSON lines, human-readable) plus a lock file; the names, formats and recovery rules are in
``docs/file-layout.md``. A write appends one line, so its cost does not grow with the
namespace; compaction rewrites the snapshot once the journal outgrows it.

Locking and caching
    Every operation that touches the files holds the namespace's exclusive ``flock`` for its
    whole duration, in one worker-thread call (lock, apply what other processes appended,
    append, maybe compact, unlock). Each namespace is cached in process; a read whose journal
    is unchanged since the cache (same inode, size and mtime: one ``os.stat``, ~3 µs, made in
    the event loop because a thread hop costs ~40 times more) is served from the cache, so a
    write by another process is seen by the next read. On a network file system where a
    ``stat`` can block, prefer ``RedisMemory`` or ``SqlMemory``.

Durability
    ``durability="process"`` (default): an acknowledged write is in the kernel's page cache; it
    survives the process being killed (``kill -9``), not a power loss. ``"fsync"``: each write is
    fsynced before ``set`` returns, so every acknowledged write survives a power loss.
    Compaction fsyncs in both modes, so a power loss never costs more than the latest writes.

Requires a POSIX system (``fcntl``). The files belong to the directory, not to the instance:
``aclose`` only drops the cache.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import json
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import anyio.to_thread

from claw_memory import hooks as _hooks
from claw_memory.contracts import MemoryEntry, MemoryHit
from claw_memory.drivers._filestore import (
    Entry,
    Space,
    Store,
    Write,
    encode_namespace,
    stored_form,
)
from claw_memory.drivers.base import MISSING, BaseMemory, RestoreItem
from claw_memory.hooks import Hooks
from claw_memory.scoring import value_text
from claw_memory.validation import NamespaceValidator, normalize_ttl, validate_key

__all__ = ["FileMemory"]

T = TypeVar("T")

DEFAULT_STORAGE_DIR = os.path.join("storage", "phpclaw", "memory")

_loads = json.loads
_time = time.time
_run_sync = anyio.to_thread.run_sync


def _value(entry: Entry) -> Any:
    return _loads(entry[0]) if entry[1] else entry[0]


def _lock(space: Space) -> asyncio.Lock:
    # An asyncio.Lock costs ~0.5 µs against ~10 µs for an anyio.Lock, but belongs to one loop:
    # a driver used again under a new loop (a second asyncio.run) gets a new one.
    loop = asyncio.get_running_loop()
    if space.loop is not loop:
        space.lock, space.loop = asyncio.Lock(), loop
    return space.lock


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


class FileMemory(BaseMemory):
    """Memory in files under ``storage_dir`` (default ``./storage/phpclaw/memory``, resolved
    against the working directory at construction and created on the first write).

    ``durability`` is ``"process"`` (default: survives a killed process) or ``"fsync"``
    (survives a power loss). Entries never expire unless given a TTL or ``default_ttl``.
    ``compact_min_bytes`` is the journal size below which it is never compacted.
    A namespace whose files are corrupt raises :class:`~claw_memory.errors.CorruptStoreError`
    on every operation, writes included, and its files are left untouched.
    """

    driver_name = "file"
    backend_errors = (OSError,)

    def __init__(
        self,
        storage_dir: str | os.PathLike[str] | None = None,
        *,
        durability: Literal["process", "fsync"] = "process",
        default_ttl: float | None = None,
        hooks: Hooks | None = None,
        compact_min_bytes: int = 64 * 1024,
    ) -> None:
        super().__init__(default_ttl=default_ttl, hooks=hooks)
        if durability not in ("process", "fsync"):
            raise ValueError(f"durability must be 'process' or 'fsync', not {durability!r}")
        if compact_min_bytes.__class__ is not int or compact_min_bytes < 0:
            raise ValueError("compact_min_bytes must be an int >= 0")
        root = os.fspath(storage_dir) if storage_dir is not None else DEFAULT_STORAGE_DIR
        self.storage_dir = os.path.abspath(root)
        self.durability = durability
        self._store = Store(
            self.storage_dir, fsync=durability == "fsync", compact_min_bytes=compact_min_bytes
        )
        self._spaces: dict[str, Space] = {}

    def __repr__(self) -> str:
        return f"FileMemory({self.storage_dir!r}, durability={self.durability!r})"

    def describe_error(self, exc: BaseException) -> str:
        if isinstance(exc, OSError) and exc.errno is not None:
            code = errno.errorcode.get(exc.errno, str(exc.errno))
            return f"{type(exc).__name__} ({code}: {exc.strerror}) under {self.storage_dir}"
        return type(exc).__name__

    # -- the cache ---------------------------------------------------------------------------
    def _space(self, namespace: str) -> Space:
        space = self._spaces.get(namespace)
        if space is None:
            base = os.path.join(self.storage_dir, encode_namespace(namespace))
            space = self._spaces[namespace] = Space(namespace, base)
        return space

    async def _ready(self, namespace: str) -> Space:
        """The namespace's cache, synced with the files when they changed since."""
        space = self._space(namespace)
        # While one of our own locked operations runs, its thread is changing the cache.
        if space.lock.locked() or not space.unchanged():
            async with _lock(space):
                if not space.unchanged():
                    await _run_sync(self._store.refresh, space)
        return space

    async def _locked(self, space: Space, op: Callable[..., T], *args: Any) -> T:
        async with _lock(space):
            return await _run_sync(op, space, *args)

    # -- BaseMemory's hooks --------------------------------------------------------------------
    async def _get(self, namespace: str, key: str) -> Any:
        entry = (await self._ready(namespace)).live(key)
        return MISSING if entry is None else _value(entry)

    async def _has(self, namespace: str, key: str) -> bool:
        return (await self._ready(namespace)).live(key) is not None

    async def _set(
        self, namespace: str, key: str, value: Any, encoded: str, ttl: float | None
    ) -> None:
        stored, is_json = stored_form(value, encoded)
        await self._locked(self._space(namespace), self._store.put, key, stored, is_json,
                           encoded, ttl)

    async def _restore(self, items: Sequence[RestoreItem]) -> None:
        # One thread hop for the batch; in it, each namespace's lock is held once while its
        # records are appended (journals store absolute expiry, so it is kept exactly).
        batches: dict[str, list[Write]] = {}
        for item in items:
            stored, is_json = stored_form(item.value, item.encoded)
            batches.setdefault(item.namespace, []).append(
                (item.key, stored, is_json, item.encoded, item.expires_at)
            )
        spaces = [(self._space(namespace), writes) for namespace, writes in batches.items()]
        async with AsyncExitStack() as stack:
            # Several in-process locks: always taken in namespace order, so two batches
            # sharing namespaces cannot wait on each other.
            for space, _ in sorted(spaces, key=lambda pair: pair[0].namespace):
                await stack.enter_async_context(_lock(space))
            await _run_sync(self._store.restore, spaces)

    async def _forget(self, namespace: str, key: str) -> None:
        await self._locked(self._space(namespace), self._store.remove, key)

    async def _flush(self, namespace: str) -> None:
        await self._locked(self._space(namespace), self._store.clear)

    async def _all(self, namespace: str) -> dict[str, Any]:
        space = await self._ready(namespace)
        now = _time()
        return {
            key: _loads(stored) if is_json else stored
            for key, (stored, is_json, _, expires, _) in space.entries.items()
            if expires is None or expires > now
        }

    async def _search(self, namespace: str, query: str, limit: int) -> list[MemoryHit]:
        space = await self._ready(namespace)
        entries = space.entries
        now = _time()

        def lookup(key: str) -> tuple[str, float] | None:
            entry = entries.get(key)
            if entry is None or (entry[3] is not None and entry[3] <= now):
                return None
            stored = entry[0]
            text = stored if entry[1] or stored.__class__ is str else value_text(stored)
            return text, entry[4]

        hits = []
        for key, score in space.index.search(query, limit, lookup):
            entry = entries[key]
            hits.append(MemoryHit(key, _value(entry), namespace, float(score), _utc(entry[2])))
        return hits

    # -- beyond the contract -------------------------------------------------------------------
    async def update(
        self,
        key: str,
        fn: Callable[[Any], Any],
        namespace: str = "default",
        ttl: float | None = None,
    ) -> Any:
        """Atomically replace ``key``'s value with ``fn(current)`` and return the new value.

        ``current`` is the live value, or ``None`` when the key is absent or expired. The whole
        read-modify-write holds the namespace's cross-process lock, so concurrent updates from
        any number of processes never lose one (``update("hits", lambda n: (n or 0) + 1)`` is
        an exact counter). ``fn`` runs in a worker thread while the lock is held: keep it short
        and synchronous. If it raises, nothing is written and its exception propagates; its
        result must be JSON-compatible (else :class:`~claw_memory.errors.InvalidValueError`).
        ``ttl`` applies to the stored result as in :meth:`set`.
        """
        validate_key(key)
        NamespaceValidator.validate(namespace)
        effective = normalize_ttl(ttl, self.default_ttl)
        if inspect.iscoroutinefunction(fn):
            raise TypeError("update() needs a plain function: it runs in a worker thread")
        try:
            value, error = await self._locked(
                self._space(namespace), self._store.update, key, fn, effective
            )
        except OSError as exc:
            raise self._unavailable("update", namespace, exc) from exc
        if error is not None:
            raise error
        if _hooks.active():
            await self._emit_write(key, namespace, effective)
        return value

    async def namespaces(self) -> list[str]:
        """Every namespace with at least one live entry, sorted."""
        try:
            found = await _run_sync(self._store.namespaces)
            return [ns for ns in found if await self._has_live(ns)]
        except OSError as exc:
            raise self._unavailable("list namespaces", None, exc) from exc

    async def _has_live(self, namespace: str) -> bool:
        now = _time()
        space = await self._ready(namespace)
        return any(e[3] is None or e[3] > now for e in space.entries.values())

    async def entries(self, namespace: str = "default") -> list[MemoryEntry]:
        """The live entries of ``namespace`` with their times, oldest stored first."""
        NamespaceValidator.validate(namespace)
        try:
            space = await self._ready(namespace)
        except OSError as exc:
            raise self._unavailable("list entries", namespace, exc) from exc
        now = _time()
        return [
            MemoryEntry(key, _value(entry), namespace, _utc(entry[2]),
                        None if entry[3] is None else _utc(entry[3]))
            for key, entry in space.entries.items()
            if entry[3] is None or entry[3] > now
        ]

    async def aclose(self) -> None:
        """Drop the in-process cache (the files stay; the instance can be used again)."""
        self._spaces.clear()
