"""Conversation documents in ``SqlMemory``: validation and their mapping to rows.

The engine stores each conversation under namespace ``conversations``, key = its ULID::

    {"id", "created_at", "updated_at", "title", "metadata",
     "messages": [{"id", "role", "content", "created_at", "name", "tool_call_id",
                   "tool_calls"}, ...]}

Each document becomes one row of ``phpclaw_conversations`` and one row per message in
``phpclaw_messages``. Next to the readable columns, every row keeps the exact JSON text of its
part (``document``), which is what ``get`` returns, so a document comes back exactly as it
was set: absent optional fields stay absent, extra fields survive, numbers keep their form.
The readable columns are a copy for SQL users: in them a NUL character becomes U+FFFD
(PostgreSQL's text and JSONB cannot hold it), absent optional fields are NULL.

Saving a document whose messages extend the stored ones inserts the new messages only. The
stored prefix is recognised by a hash chain over the messages' JSON texts
(``messages_digest``), and within a process by the last saved copy, so a turn costs O(1) SQL
statements and O(new messages) encoding. Any other change rewrites that conversation's
message rows.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import and_, bindparam, delete, exc, insert, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from ulid import ULID

from claw_memory.contracts import MemoryEntry, MemoryHit
from claw_memory.drivers._sql_schema import Tables
from claw_memory.drivers.base import MISSING
from claw_memory.errors import CorruptStoreError, InvalidValueError
from claw_memory.scoring import TokenOverlapScorer
from claw_memory.validation import encode_json

__all__ = [
    "CONVERSATIONS", "ROLES", "ConversationStore", "PreparedConversation", "validate_conversation",
]

CONVERSATIONS: Final = "conversations"
ROLES: Final = frozenset({"user", "assistant", "system", "tool"})
_CACHED_CONVERSATIONS: Final = 256


# -- validation -------------------------------------------------------------------------------

def _ulid(value: object, what: str) -> str:
    if not isinstance(value, str) or len(value) != 26:
        raise InvalidValueError(f"{what} must be a 26-character ULID string")
    try:
        canonical = str(ULID.from_str(value))
    except ValueError:
        raise InvalidValueError(f"{what} must be a valid ULID") from None
    if canonical != value:
        raise InvalidValueError(f"{what} must be a ULID in canonical upper-case form")
    return canonical


def _timestamp(value: object, what: str) -> datetime:
    if not isinstance(value, str):
        raise InvalidValueError(f"{what} must be an ISO-8601 timestamp string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidValueError(f"{what} must be an ISO-8601 timestamp string") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _optional(value: object, kinds: tuple[type, ...], what: str) -> None:
    if value is not None and not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise InvalidValueError(f"{what} must be {names} or None, not {type(value).__name__}")


@dataclass(slots=True)
class _Header:
    text: str
    columns: dict[str, Any]


def _split(key: str, document: object) -> tuple[_Header, Sequence[Any]]:
    if not isinstance(document, dict):
        raise InvalidValueError(
            f"namespace {CONVERSATIONS!r} holds conversation documents (a dict with id, "
            f"created_at, updated_at and messages), not a {type(document).__name__}"
        )
    _ulid(key, "a conversation's key")
    if document.get("id") != key:
        raise InvalidValueError("a conversation document's 'id' must equal its key")
    messages = document.get("messages")
    if not isinstance(messages, (list, tuple)):
        raise InvalidValueError("a conversation document's 'messages' must be a list")
    created = _timestamp(document.get("created_at"), "a conversation's 'created_at'")
    updated = _timestamp(document.get("updated_at"), "a conversation's 'updated_at'")
    title = document.get("title")
    metadata = document.get("metadata")
    _optional(title, (str,), "a conversation's 'title'")
    _optional(metadata, (dict,), "a conversation's 'metadata'")
    text = encode_json({k: v for k, v in document.items() if k != "messages"})
    return _Header(text, {
        "title": _clean(title),
        "metadata": _clean_json(metadata, text),
        "document": text,
        "created_at": created,
        "updated_at": updated,
    }), messages


def _message_row(message: object, position: int) -> dict[str, Any]:
    what = f"message {position}"
    if not isinstance(message, dict):
        raise InvalidValueError(f"{what} must be a dict, not {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise InvalidValueError(f"{what}'s 'role' must be one of {', '.join(sorted(ROLES))}")
    content = message.get("content")
    _optional(content, (str,), f"{what}'s 'content'")
    _optional(message.get("name"), (str,), f"{what}'s 'name'")
    _optional(message.get("tool_call_id"), (str,), f"{what}'s 'tool_call_id'")
    tool_calls = message.get("tool_calls")
    _optional(tool_calls, (list, tuple), f"{what}'s 'tool_calls'")
    created = _timestamp(message.get("created_at"), f"{what}'s 'created_at'")
    text = encode_json(message)
    return {
        "position": position,
        "id": _ulid(message.get("id"), f"{what}'s 'id'"),
        "role": role,
        "content": _clean(content),
        "name": _clean(message.get("name")),
        "tool_call_id": _clean(message.get("tool_call_id")),
        "tool_calls": _clean_json(tool_calls, text),
        "document": text,
        "created_at": created,
    }


def validate_conversation(key: str, document: Any) -> None:
    """Raise :class:`InvalidValueError` unless ``document`` is a conversation stored as ``key``.

    Required: ``id`` (= ``key``, a canonical 26-character ULID), ``created_at`` and
    ``updated_at`` (ISO-8601 strings) and ``messages`` (a list). Optional: ``title`` (str),
    ``metadata`` (dict). Each message needs ``id`` (ULID), ``role`` (user, assistant, system,
    tool) and ``created_at``; ``content``, ``name``, ``tool_call_id`` (str) and
    ``tool_calls`` (list) may be absent or None. Everything must be JSON-compatible.
    """
    _, messages = _split(key, document)
    for position, message in enumerate(messages):
        _message_row(message, position)


def _clean(text: str | None) -> str | None:
    return text.replace("\x00", "\ufffd") if text and "\x00" in text else text


def _clean_json(value: Any, encoded: str) -> Any:
    if value is None or "\\u0000" not in encoded:
        return value
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, dict):
        return {_clean(k): _clean_json(v, encoded) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_json(v, encoded) for v in value]
    return value


def _chain(digest: str, texts: Sequence[str]) -> list[str]:
    """The running digest after each text: a hash chain over the messages' JSON texts."""
    out = []
    for text in texts:
        digest = hashlib.blake2b((digest + text).encode(), digest_size=16).hexdigest()
        out.append(digest)
    return out


@dataclass(slots=True)
class _Saved:
    """What this process last saved of a conversation (valid while the row's seq matches)."""

    seq: int
    digest: str
    messages: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class PreparedConversation:
    """A validated document with its rows, for :meth:`ConversationStore.write`."""

    key: str
    rows: list[dict[str, Any]]
    values: dict[str, Any]


# -- storage ----------------------------------------------------------------------------------

class ConversationStore:
    """The ``conversations`` namespace of one ``SqlMemory``."""

    def __init__(self, engine: AsyncEngine, tables: Tables, clock: Callable[[], int]) -> None:
        self._engine = engine
        self._clock = clock
        self._saved: OrderedDict[str, _Saved] = OrderedDict()
        c, m = tables.conversations, tables.messages
        live = or_(c.c.expires_at.is_(None), c.c.expires_at > bindparam("now"))
        self._select = (
            select(c.c.id, c.c.document, c.c.seq, c.c.expires_at, m.c.document)
            .select_from(c.outerjoin(m, m.c.conversation_id == c.c.id))
            .where(live)
            .order_by(c.c.seq, m.c.position)
        )
        self._select_one = self._select.where(c.c.id == bindparam("cid"))
        self._has = select(literal(1)).select_from(c).where(c.c.id == bindparam("cid"), live)
        self._any = select(literal(1)).select_from(c).where(live).limit(1)
        by_id = c.c.id == bindparam("cid")
        self._touch = update(c).where(by_id)
        self._state = select(c.c.message_count, c.c.messages_digest).where(by_id)
        self._update = update(c).where(by_id)
        self._update_if = update(c).where(and_(by_id, c.c.seq == bindparam("old_seq")))
        self._insert = insert(c)
        self._insert_messages = insert(m)
        self._delete_messages = delete(m).where(m.c.conversation_id == bindparam("cid"))
        self._delete = delete(c).where(by_id)
        self._flush = (delete(m), delete(c))
        expired = c.c.expires_at <= bindparam("now")
        self._purge = (
            delete(m).where(m.c.conversation_id.in_(select(c.c.id).where(expired))),
            delete(c).where(expired),
        )

    # reads
    async def get(self, key: str, now: datetime) -> Any:
        async with self._engine.connect() as conn:
            rows = (await conn.execute(self._select_one, {"cid": key, "now": now})).all()
        if not rows:
            return MISSING
        return _assemble(rows[0][1], [r[4] for r in rows if r[4] is not None])

    async def has(self, key: str, now: datetime) -> bool:
        async with self._engine.connect() as conn:
            return (await conn.execute(self._has, {"cid": key, "now": now})).first() is not None

    async def any_live(self, now: datetime) -> bool:
        async with self._engine.connect() as conn:
            return (await conn.execute(self._any, {"now": now})).first() is not None

    async def entries(self, now: datetime) -> list[MemoryEntry]:
        async with self._engine.connect() as conn:
            rows = (await conn.execute(self._select, {"now": now})).all()
        parts: dict[str, tuple[str, int, datetime | None, list[str]]] = {}
        for key, header, seq, expires_at, message in rows:
            entry = parts.get(key)
            if entry is None:
                entry = parts[key] = (header, seq, expires_at, [])
            if message is not None:
                entry[3].append(message)
        return [
            MemoryEntry(key, _assemble(header, texts), CONVERSATIONS, _stored_at(seq), expires)
            for key, (header, seq, expires, texts) in parts.items()
        ]

    async def all(self, now: datetime) -> tuple[dict[str, Any], dict[str, datetime | None]]:
        entries = await self.entries(now)
        return {e.key: e.value for e in entries}, {e.key: e.stored_at for e in entries}

    async def search(self, query: str, limit: int, now: datetime) -> list[MemoryHit]:
        # Correct rather than fast: documents are ranked over their whole JSON text.
        documents, stored_at = await self.all(now)
        return TokenOverlapScorer.rank(documents, query, limit, CONVERSATIONS, stored_at)

    # writes
    async def save(self, key: str, document: Any, ttl: float | None) -> None:
        header, messages = _split(key, document)
        seq = self._clock()
        when = _stored_at(seq)
        values = dict(header.columns, seq=seq, message_count=len(messages),
                      expires_at=None if ttl is None else when + timedelta(seconds=ttl))
        saved = self._saved.get(key)
        if saved is not None and (
            len(saved.messages) > len(messages)
            or list(messages[: len(saved.messages)]) != saved.messages
        ):
            saved = None
        for attempt in (1, 2):
            try:
                async with self._engine.begin() as conn:
                    result = await self._save(conn, key, messages, values, saved)
                break
            except exc.IntegrityError:
                # Two writers created the same conversation at once: the row exists now.
                if attempt == 2:
                    raise
                saved = None
        self.remember(key, result)

    def prepare(self, key: str, document: Any, expires_at: datetime | None
                ) -> PreparedConversation:
        """Validate ``document`` (as :meth:`save` does) and build its rows, without I/O.

        Its recency is taken now, so documents prepared in turn are stored in that order.
        """
        header, messages = _split(key, document)
        rows = [_message_row(m, i) for i, m in enumerate(messages)]
        values = dict(header.columns, seq=self._clock(), message_count=len(rows),
                      expires_at=expires_at)
        return PreparedConversation(key, rows, values)

    async def write(
        self, conn: AsyncConnection, prepared: Sequence[PreparedConversation]
    ) -> list[tuple[str, _Saved]]:
        """Store prepared documents in the caller's transaction; hand the result to
        :meth:`remember` once it commits."""
        return [(p.key, await self._write_all(conn, p.key, p.rows, p.values)) for p in prepared]

    def remember(self, key: str, saved: _Saved) -> None:
        """Keep what a committed transaction stored, for the next save's append path."""
        self._saved[key] = saved
        self._saved.move_to_end(key)
        if len(self._saved) > _CACHED_CONVERSATIONS:
            self._saved.popitem(last=False)

    async def _save(
        self,
        conn: AsyncConnection,
        key: str,
        messages: Sequence[Any],
        values: dict[str, Any],
        saved: _Saved | None,
    ) -> _Saved:
        seq = values["seq"]
        if saved is not None:
            start = len(saved.messages)
            rows = [_message_row(m, i) for i, m in enumerate(messages[start:], start)]
            digests = _chain(saved.digest, [r["document"] for r in rows])
            digest = digests[-1] if digests else saved.digest
            done = await conn.execute(
                self._update_if,
                dict(values, messages_digest=digest, cid=key, old_seq=saved.seq),
            )
            if done.rowcount == 1:
                await self._insert_rows(conn, key, rows)
                return _Saved(seq, digest, saved.messages + [_copy(r) for r in rows])
        # The general path: this process does not know the stored state, or it changed.
        rows = [_message_row(m, i) for i, m in enumerate(messages)]
        return await self._write_all(conn, key, rows, values)

    async def _write_all(
        self, conn: AsyncConnection, key: str, rows: list[dict[str, Any]], values: dict[str, Any]
    ) -> _Saved:
        """Store a whole document over an unknown stored state (a matching stored prefix of its
        messages is kept, only the rest is inserted)."""
        seq = values["seq"]
        digests = _chain("", [r["document"] for r in rows])
        digest = digests[-1] if digests else ""
        # Writing first takes the row lock (and SQLite's write lock) before reading the state.
        if (await conn.execute(self._touch, {"cid": key, "seq": seq})).rowcount == 0:
            await conn.execute(self._insert, dict(values, id=key, messages_digest=digest))
            start = 0
        else:
            count, stored = (await conn.execute(self._state, {"cid": key})).one()
            if stored is not None and count <= len(rows) and stored == ["", *digests][count]:
                start = count
            else:
                await conn.execute(self._delete_messages, {"cid": key})
                start = 0
            await conn.execute(self._update, dict(values, messages_digest=digest, cid=key))
        await self._insert_rows(conn, key, rows[start:])
        return _Saved(seq, digest, [_copy(r) for r in rows])

    async def _insert_rows(
        self, conn: AsyncConnection, key: str, rows: list[dict[str, Any]]
    ) -> None:
        if rows:
            await conn.execute(self._insert_messages, [dict(r, conversation_id=key) for r in rows])

    async def forget(self, key: str) -> None:
        self._saved.pop(key, None)
        async with self._engine.begin() as conn:
            await conn.execute(self._delete_messages, {"cid": key})
            await conn.execute(self._delete, {"cid": key})

    async def purge(self, now: datetime) -> None:
        async with self._engine.begin() as conn:
            for statement in self._purge:
                await conn.execute(statement, {"now": now})

    async def flush(self) -> None:
        self._saved.clear()
        async with self._engine.begin() as conn:
            for statement in self._flush:
                await conn.execute(statement)


def _copy(row: dict[str, Any]) -> Any:
    return json.loads(row["document"])


def _stored_at(seq: int) -> datetime:
    return datetime.fromtimestamp(seq / 1_000_000, UTC)


def _assemble(header: str, messages: list[str]) -> Any:
    try:
        document = json.loads(header)
        document["messages"] = json.loads("[" + ",".join(messages) + "]")
    except ValueError:
        raise CorruptStoreError(
            f"a stored conversation in namespace {CONVERSATIONS!r} is not valid JSON",
            namespace=CONVERSATIONS,
        ) from None
    return document
