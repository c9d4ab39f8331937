"""``SqlMemory``: memory in the application's own database, through SQLAlchemy 2 async.

Works on SQLite (``sqlite+aiosqlite``), PostgreSQL (``postgresql+asyncpg``) and MariaDB/MySQL
(``mysql+asyncmy``). Tables, with an optional ``table_prefix``: ``phpclaw_memory`` holds every
namespace but ``conversations`` (one row per entry, the value as its exact JSON text);
``phpclaw_memory_words`` is the keyword index ``search`` counts in SQL; namespace
``conversations`` lives in ``phpclaw_conversations`` and ``phpclaw_messages`` (see
:mod:`claw_memory.drivers._sql_conversations`). ``docs/sql-schema.md`` describes the columns.

* Schema: ``await memory.create_schema()`` applies the versioned migrations (recorded in
  ``phpclaw_migrations``); the first operation runs it too unless ``auto_create=False``.
* Ownership: built from a URL, the driver owns its engine and disposes of it in
  :meth:`aclose`; handed an ``AsyncEngine``, it leaves it open.
* Each operation is one transaction. ``set`` is one upsert; it marks the entry's keywords as
  stale, and the next ``search`` of that namespace re-indexes the stale entries in its own
  transaction before counting matching keywords with one grouped query.
* Recency (``all()`` order, search ties) is a microsecond timestamp made strictly increasing
  within the process, so two sets in one clock tick still order; writers in different
  processes order by their clocks.
* Expired rows are invisible at once and deleted by :meth:`purge_expired`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Final

from claw_memory import hooks as _hooks
from claw_memory.contracts import MemoryEntry, MemoryHit
from claw_memory.drivers.base import MISSING, BaseMemory, RestoreItem
from claw_memory.errors import CorruptStoreError, DriverUnavailableError
from claw_memory.hooks import Hooks
from claw_memory.scoring import TokenOverlapScorer
from claw_memory.validation import NamespaceValidator, normalize_ttl, validate_key

try:
    from sqlalchemy import URL, make_url
    from sqlalchemy.exc import DBAPIError, IntegrityError, NoSuchModuleError, SQLAlchemyError
    from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
    from sqlalchemy.pool import StaticPool
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("SqlMemory needs SQLAlchemy: install claw-memory[sql]") from exc

from claw_memory.drivers._sql_conversations import (
    CONVERSATIONS,
    ConversationStore,
    PreparedConversation,
)
from claw_memory.drivers._sql_schema import MYSQL, Statements, build_tables, migrate

__all__ = ["SqlMemory"]

_PREFIX = re.compile(r"[A-Za-z0-9_]{0,32}")
_WORD_MAX: Final = 100
_CHUNK: Final = 500
_last_seq = 0


def _next_seq() -> int:
    """Microseconds since the epoch, strictly increasing within the process."""
    global _last_seq
    now = time.time_ns() // 1000
    _last_seq = now if now > _last_seq else _last_seq + 1
    return _last_seq


def _word(word: str) -> str:
    # Keywords longer than the column keep a prefix plus a digest of the whole word, applied
    # alike to stored and query keywords, so matching stays exact.
    if len(word) <= _WORD_MAX:
        return word
    return word[:67] + "#" + hashlib.blake2b(word.encode(), digest_size=16).hexdigest()


def _words(stored: str) -> list[str]:
    text = json.loads(stored) if stored.startswith('"') else stored
    return list(dict.fromkeys(_word(w) for w in TokenOverlapScorer.keywords(text)))


class SqlMemory(BaseMemory):
    """Memory in SQL tables. Never expires by default.

    ``url_or_engine`` is a SQLAlchemy async URL (the driver owns the engine it creates) or an
    application's ``AsyncEngine`` (left open on :meth:`aclose`). ``table_prefix`` (letters,
    digits, ``_``, at most 32) lets several stores share a database.
    """

    driver_name = "sql"
    backend_errors: ClassVar[tuple[type[BaseException], ...]] = (SQLAlchemyError, OSError)

    def __init__(
        self,
        url_or_engine: str | URL | AsyncEngine,
        *,
        table_prefix: str = "",
        default_ttl: float | None = None,
        hooks: Hooks | None = None,
        auto_create: bool = True,
    ) -> None:
        super().__init__(default_ttl=default_ttl, hooks=hooks)
        if not isinstance(table_prefix, str) or not _PREFIX.fullmatch(table_prefix):
            raise ValueError("table_prefix may hold at most 32 letters, digits and '_'")
        self._owns = not isinstance(url_or_engine, AsyncEngine)
        self._engine = url_or_engine if isinstance(url_or_engine, AsyncEngine) else _engine(
            url_or_engine
        )
        self._prefix = table_prefix
        self._ready = not auto_create
        self._lock: asyncio.Lock | None = None
        url = self._engine.url
        dialect = self._engine.dialect.name
        self._where = f"{dialect} at {url.host or 'localhost'}{f':{url.port}' if url.port else ''}"
        if dialect == "sqlite":
            self._where = "sqlite"
        if dialect not in ("sqlite", "postgresql", *MYSQL):
            raise DriverUnavailableError(
                f"SqlMemory supports SQLite, PostgreSQL and MariaDB/MySQL, not {dialect}",
                driver="sql",
            )
        self.tables = tables = build_tables(table_prefix)
        self._conversations = ConversationStore(self._engine, tables, _next_seq)
        self._q = Statements(tables, dialect)

    @property
    def engine(self) -> AsyncEngine:
        """The engine the driver uses (its own, or the one it was given)."""
        return self._engine

    def describe_error(self, exc: BaseException) -> str:
        name = type(exc).__name__
        if isinstance(exc, DBAPIError) and exc.orig is not None:
            name = f"{name} ({type(exc.orig).__name__})"
        return f"{name} on {self._where}"

    # -- lifecycle ----------------------------------------------------------------------------
    async def create_schema(self) -> None:
        """Create the tables, or upgrade them to the current version. Idempotent."""
        try:
            async with self._engine.begin() as conn:
                await conn.run_sync(migrate, self._prefix)
        except self.backend_errors as exc:
            raise self._unavailable("create its schema", None, exc) from exc
        self._ready = True

    async def _ensure_schema(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not self._ready:
                await self.create_schema()

    async def purge_expired(self) -> None:
        """Delete every expired entry and conversation (they are already invisible)."""
        if not self._ready:
            await self._ensure_schema()
        try:
            async with self._engine.begin() as conn:
                for statement in self._q.expired:
                    await conn.execute(statement, {"now": _now()})
            await self._conversations.purge(_now())
        except self.backend_errors as exc:
            raise self._unavailable("purge expired entries", None, exc) from exc

    async def aclose(self) -> None:
        if self._owns:
            await self._engine.dispose()

    # -- inspection -----------------------------------------------------------------------
    async def namespaces(self) -> list[str]:
        """Every namespace holding at least one live entry, sorted."""
        try:
            if not self._ready:
                await self._ensure_schema()
            now = _now()
            async with self._engine.connect() as conn:
                names = set((await conn.execute(self._q.namespaces, {"now": now})).scalars())
            if await self._conversations.any_live(now):
                names.add(CONVERSATIONS)
        except self.backend_errors as exc:
            raise self._unavailable("list its namespaces", None, exc) from exc
        return sorted(names)

    async def entries(self, namespace: str = "default") -> list[MemoryEntry]:
        """The live entries of ``namespace`` with their expiry, oldest stored first."""
        NamespaceValidator.validate(namespace)
        try:
            if not self._ready:
                await self._ensure_schema()
            if namespace == CONVERSATIONS:
                return await self._conversations.entries(_now())
            async with self._engine.connect() as conn:
                rows = (await conn.execute(
                    self._q.entries, {"ns": namespace, "now": _now()}
                )).all()
        except self.backend_errors as exc:
            raise self._unavailable("list entries", namespace, exc) from exc
        return [
            MemoryEntry(key, _decode(stored, namespace), namespace, stored_at, expires_at)
            for key, stored, stored_at, expires_at in rows
        ]

    # -- conversations bypass the whole-document encoding of BaseMemory.set -------------------
    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        if namespace != CONVERSATIONS:
            return await super().set(key, value, namespace, ttl)
        validate_key(key)
        effective = normalize_ttl(ttl, self.default_ttl)
        try:
            if not self._ready:
                await self._ensure_schema()
            # Validates the document (new messages only, when the rest is already stored).
            await self._conversations.save(key, value, effective)
        except self.backend_errors as exc:
            raise self._unavailable("set", namespace, exc) from exc
        if _hooks.active():
            await self._emit_write(key, namespace, effective)

    # -- BaseMemory hooks ---------------------------------------------------------------------
    async def _get(self, namespace: str, key: str) -> Any:
        if not self._ready:
            await self._ensure_schema()
        if namespace == CONVERSATIONS:
            return await self._conversations.get(key, _now())
        async with self._engine.connect() as conn:
            stored = (await conn.execute(
                self._q.get, {"ns": namespace, "key": key, "now": _now()}
            )).scalar()
        return MISSING if stored is None else _decode(stored, namespace)

    async def _has(self, namespace: str, key: str) -> bool:
        if not self._ready:
            await self._ensure_schema()
        if namespace == CONVERSATIONS:
            return await self._conversations.has(key, _now())
        async with self._engine.connect() as conn:
            row = (await conn.execute(
                self._q.has, {"ns": namespace, "key": key, "now": _now()}
            )).first()
        return row is not None

    async def _set(
        self, namespace: str, key: str, value: Any, encoded: str, ttl: float | None
    ) -> None:
        if not self._ready:
            await self._ensure_schema()
        if namespace == CONVERSATIONS:
            await self._conversations.save(key, value, ttl)
            return
        seq = _next_seq()
        now = datetime.fromtimestamp(seq / 1_000_000, UTC)
        params = {
            "ns": namespace, "key": key, "value": encoded, "seq": seq, "now": now,
            "exp": None if ttl is None else now + timedelta(seconds=ttl),
        }
        async with self._engine.begin() as conn:
            await conn.execute(self._q.upsert, params)

    async def _restore(self, items: Sequence[RestoreItem]) -> None:
        # Everything is validated (conversation documents included) and given its recency in
        # batch order before the one transaction starts. A key given twice keeps its last
        # entry, which is what writing both in order would leave.
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        documents: dict[str, PreparedConversation] = {}
        for item in items:
            expires = None if item.expires_at is None else _utc(item.expires_at)
            if item.namespace == CONVERSATIONS:
                documents.pop(item.key, None)
                documents[item.key] = self._conversations.prepare(item.key, item.value, expires)
                continue
            seq = _next_seq()
            rows.pop((item.namespace, item.key), None)
            rows[item.namespace, item.key] = {
                "ns": item.namespace, "key": item.key, "value": item.encoded, "seq": seq,
                "now": _utc(seq / 1_000_000), "exp": expires,
            }
        if not self._ready:
            await self._ensure_schema()
        cutoff = _now()  # skip what expired since the batch was checked
        upserts = [r for r in rows.values() if r["exp"] is None or r["exp"] > cutoff]
        prepared = [
            p for p in documents.values()
            if p.values["expires_at"] is None or p.values["expires_at"] > cutoff
        ]
        if not upserts and not prepared:
            return
        # Recency is each row's seq, not the order of writing: writing in key order makes two
        # restores that share keys lock rows in the same order instead of deadlocking.
        upserts.sort(key=lambda row: (row["ns"], row["key"]))
        prepared.sort(key=lambda document: document.key)
        for attempt in (1, 2):
            try:
                async with self._engine.begin() as conn:
                    if upserts:
                        await conn.execute(self._q.upsert, upserts)
                    saved = await self._conversations.write(conn, prepared)
                break
            except IntegrityError:
                # Another writer created one of the conversations meanwhile: it exists now.
                if attempt == 2 or not prepared:
                    raise
        for key, state in saved:
            self._conversations.remember(key, state)

    async def _forget(self, namespace: str, key: str) -> None:
        if not self._ready:
            await self._ensure_schema()
        if namespace == CONVERSATIONS:
            await self._conversations.forget(key)
            return
        async with self._engine.begin() as conn:
            for statement in self._q.forget:
                await conn.execute(statement, {"ns": namespace, "key": key})

    async def _flush(self, namespace: str) -> None:
        if not self._ready:
            await self._ensure_schema()
        if namespace == CONVERSATIONS:
            await self._conversations.flush()
            return
        async with self._engine.begin() as conn:
            for statement in self._q.flush:
                await conn.execute(statement, {"ns": namespace})

    async def _all(self, namespace: str) -> dict[str, Any]:
        if not self._ready:
            await self._ensure_schema()
        if namespace == CONVERSATIONS:
            return (await self._conversations.all(_now()))[0]
        async with self._engine.connect() as conn:
            rows = (await conn.execute(self._q.all, {"ns": namespace, "now": _now()})).all()
        return {key: _decode(stored, namespace) for key, stored in rows}

    async def _search(self, namespace: str, query: str, limit: int) -> list[MemoryHit]:
        if not self._ready:
            await self._ensure_schema()
        if namespace == CONVERSATIONS:
            return await self._conversations.search(query, limit, _now())
        words = list(dict.fromkeys(_word(w) for w in TokenOverlapScorer.keywords(query)))
        if not words:
            return []
        async with self._engine.connect() as conn:
            if (await conn.execute(self._q.stale, {"ns": namespace})).first() is not None:
                await conn.rollback()
                async with conn.begin():
                    await self._index(conn, namespace)
            rows = (await conn.execute(
                self._q.search,
                {"ns": namespace, "words": words, "limit": limit, "now": _now()},
            )).all()
        return [
            MemoryHit(key, _decode(stored, namespace), namespace, float(score), stored_at)
            for key, stored, stored_at, score in rows
        ]

    async def _index(self, conn: Any, namespace: str) -> None:
        """Bring the keyword rows of the namespace's stale entries up to date."""
        params = {"ns": namespace}
        # Claiming with an UPDATE first locks the rows (and SQLite's database) before reading.
        if (await conn.execute(self._q.claim, params)).rowcount == 0:
            return
        rows = (await conn.execute(self._q.claimed, params)).all()
        keys = [key for key, _ in rows]
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            await conn.execute(self._q.unindex, {"ns": namespace, "keys": chunk})
        words = [
            {"namespace": namespace, "key": key, "word": word}
            for key, stored in rows
            for word in _words(stored)
        ]
        if words:
            await conn.execute(self._q.insert_words, words)
        await conn.execute(self._q.indexed, params)


def _now() -> datetime:
    return datetime.now(UTC)


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def _decode(stored: str, namespace: str) -> Any:
    try:
        return json.loads(stored)
    except ValueError:
        raise CorruptStoreError(
            f"a stored value in namespace {namespace!r} is not valid JSON", namespace=namespace
        ) from None


def _engine(url: str | URL) -> AsyncEngine:
    try:
        parsed = make_url(url)
    except (SQLAlchemyError, ValueError, TypeError) as exc:
        raise DriverUnavailableError(
            f"SqlMemory could not parse the database URL: {type(exc).__name__}", driver="sql"
        ) from None  # the exception's text may hold the URL and its password
    try:
        options: dict[str, Any] = {"hide_parameters": True}
        backend = parsed.get_backend_name()
        if backend == "sqlite" and parsed.database in (None, "", ":memory:"):
            options["poolclass"] = StaticPool  # one in-memory database, shared
        if backend in MYSQL:
            if "charset" not in parsed.query:
                parsed = parsed.update_query_dict({"charset": "utf8mb4"})
            options["pool_recycle"] = 3600
        return create_async_engine(parsed, **options)
    except (ImportError, NoSuchModuleError) as exc:
        raise DriverUnavailableError(
            f"SqlMemory cannot load a driver for {parsed.drivername!r}: install "
            "claw-memory[sql] (aiosqlite, asyncpg, asyncmy) or the async driver named",
            driver="sql",
        ) from exc
    except (SQLAlchemyError, ValueError, TypeError) as exc:
        raise DriverUnavailableError(
            f"SqlMemory could not use the {parsed.drivername!r} URL: {type(exc).__name__}",
            driver="sql",
        ) from exc
