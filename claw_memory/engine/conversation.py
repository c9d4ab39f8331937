"""Conversations: the immutable values the engine returns, and how conversations are stored.

A conversation is one JSON document in namespace ``conversations``, under its id (a ULID), set
without a TTL argument (so it lives as long as the driver's default TTL says)::

    {"id": "01J...", "created_at": "2025-01-01T12:00:00.000000+00:00", "updated_at": "...",
     "title": None, "metadata": {},
     "messages": [{"id": "01J...", "role": "user", "content": "...", "created_at": "...",
                   "name": None, "tool_call_id": None, "tool_calls": None}, ...]}

Messages only ever grow at the end. The document holds the user's raw text and the model's
reply, never the recall block. Timestamps are ISO-8601, timezone-aware UTC.

Concurrent turns on one conversation inside one process are serialised by a lock per
conversation id, held from reading the latest stored document to saving the next one, so no
turn is lost and each turn sees every turn saved before it. Processes sharing a store do not
share these locks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias, get_args

from ulid import ULID

from claw_memory.contracts import Memory
from claw_memory.errors import CorruptStoreError
from claw_memory.validation import encode_json

__all__ = [
    "CONVERSATIONS",
    "Conversation",
    "ConversationStore",
    "Message",
    "Response",
    "Role",
    "Turn",
    "new_id",
    "utc_now",
]

#: The namespace conversations are stored in.
CONVERSATIONS: Final = "conversations"

Role: TypeAlias = Literal["user", "assistant", "system", "tool"]
_ROLES: Final = frozenset(get_args(Role))


def new_id() -> str:
    """A new ULID as its 26-character string."""
    return str(ULID())


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def _freeze(value: Any) -> Any:
    # Read-only views all the way down: a Conversation's metadata cannot be changed in place.
    if isinstance(value, Mapping):
        return MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation, as stored."""

    role: Role
    content: str
    id: str = field(default_factory=new_id)
    created_at: datetime = field(default_factory=utc_now)
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: Any = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if self.tool_calls is not None:
            object.__setattr__(self, "tool_calls", _freeze(self.tool_calls))

    def to_document(self) -> dict[str, Any]:
        """The message as it appears in a conversation document."""
        return {
            "id": self.id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
            "name": self.name,
            "tool_call_id": self.tool_call_id,
            "tool_calls": _thaw(self.tool_calls),
        }


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation at one point in time. Each turn returns a new one; this one never changes.

    ``history`` holds the stored messages, oldest first (raw user texts and replies);
    ``metadata`` is a read-only mapping of JSON values.
    """

    id: str
    history: tuple[Message, ...] = ()
    created_at: datetime = field(default_factory=utc_now)
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)
    title: str | None = None
    updated_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "history", tuple(self.history))
        if not isinstance(self.metadata, Mapping):
            raise TypeError("metadata must be a mapping")
        # A JSON round trip both validates the metadata and detaches it from the caller's dict.
        metadata = json.loads(encode_json(_thaw(self.metadata)))
        object.__setattr__(self, "metadata", _freeze(metadata))

    @property
    def turn_count(self) -> int:
        """The number of turns (user messages), not of messages."""
        return sum(1 for message in self.history if message.role == "user")

    def appended(self, *messages: Message) -> Conversation:
        """A new conversation with ``messages`` added at the end, updated at the last one's time."""
        return Conversation(
            id=self.id,
            history=self.history + messages,
            created_at=self.created_at,
            metadata=self.metadata,
            title=self.title,
            updated_at=messages[-1].created_at if messages else self.updated_at,
        )

    def to_document(self) -> dict[str, Any]:
        """The stored form (see the module docstring)."""
        return {
            "id": self.id,
            "created_at": self.created_at.isoformat(),
            "updated_at": (self.updated_at or self.created_at).isoformat(),
            "title": self.title,
            "metadata": _thaw(self.metadata),
            "messages": [message.to_document() for message in self.history],
        }

    @classmethod
    def from_document(cls, document: Any) -> Conversation:
        """Rebuild a conversation from its stored form; ``ValueError`` when it is not one."""
        try:
            return _parse_conversation(document)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a conversation document ({type(exc).__name__})") from exc


def _timestamp(text: Any) -> datetime:
    if not isinstance(text, str):
        raise TypeError("timestamp must be a string")
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("expected a string or null")
    return value


def _parse_message(item: Any) -> Message:
    role, content, message_id = item["role"], item.get("content"), item["id"]
    if content is None:  # other writers may store tool-call messages without content
        content = ""
    if role not in _ROLES or not isinstance(content, str) or not isinstance(message_id, str):
        raise ValueError("bad message")
    return Message(
        role=role,
        content=content,
        id=message_id,
        created_at=_timestamp(item["created_at"]),
        name=_optional_str(item.get("name")),
        tool_call_id=_optional_str(item.get("tool_call_id")),
        tool_calls=item.get("tool_calls"),
    )


def _parse_conversation(document: Any) -> Conversation:
    conversation_id, messages = document["id"], document["messages"]
    metadata = document.get("metadata") or {}
    if not isinstance(conversation_id, str) or not isinstance(messages, list):
        raise ValueError("bad conversation")
    if not isinstance(metadata, dict):
        raise ValueError("bad metadata")
    created_at = _timestamp(document["created_at"])
    updated = document.get("updated_at")
    return Conversation(
        id=conversation_id,
        history=tuple(_parse_message(item) for item in messages),
        created_at=created_at,
        metadata=metadata,
        title=_optional_str(document.get("title")),
        updated_at=_timestamp(updated) if updated is not None else None,
    )


@dataclass(frozen=True, slots=True)
class Response:
    """What a call answered: the model's ``text``.

    ``run_id`` is the id every event of the call carried; ``recalled`` lists the keys of the
    memory entries injected into the message.
    """

    text: str
    model: str
    run_id: str
    recalled: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    """One completed conversation turn: the response, and the conversation including it."""

    response: Response
    conversation: Conversation


class ConversationStore:
    """Loads and saves conversation documents through a memory, one turn at a time per id.

    With no memory, nothing is read or stored: a conversation then lives only in the
    :class:`Conversation` values the caller holds.
    """

    __slots__ = ("_locks", "memory")

    def __init__(self, memory: Memory | None) -> None:
        self.memory = memory
        # conversation id -> [lock, number of holders and waiters]; dropped when unused.
        self._locks: dict[str, list[Any]] = {}

    async def load(self, conversation_id: str) -> Conversation | None:
        """The stored conversation, or ``None`` when there is none (or no memory)."""
        if self.memory is None:
            return None
        document = await self.memory.get(conversation_id, CONVERSATIONS)
        if document is None:
            return None
        try:
            conversation = Conversation.from_document(document)
        except ValueError as exc:
            raise CorruptStoreError(
                f"conversation {conversation_id!r} in namespace {CONVERSATIONS!r} "
                "is not a conversation document",
                namespace=CONVERSATIONS,
            ) from exc
        if conversation.id != conversation_id:
            raise CorruptStoreError(
                f"conversation stored under {conversation_id!r} in namespace "
                f"{CONVERSATIONS!r} names another id",
                namespace=CONVERSATIONS,
            )
        return conversation

    async def latest(self, passed: Conversation) -> Conversation:
        """The state a turn extends: the stored conversation or ``passed``, whichever holds
        more messages (the stored one on a tie).

        Messages only grow, so a stale ``passed`` value yields to the stored state, and with
        nothing stored (no memory, or message storage off) ``passed`` carries the history.
        """
        stored = await self.load(passed.id)
        if stored is not None and len(stored.history) >= len(passed.history):
            return stored
        return passed

    async def save(self, conversation: Conversation) -> None:
        """Store ``conversation``; a save that has started completes even if cancelled."""
        if self.memory is None:
            return
        write = asyncio.ensure_future(
            self.memory.set(conversation.id, conversation.to_document(), CONVERSATIONS)
        )
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            # The caller still holds the conversation's lock: let the write land before the
            # lock is released, so the next turn reads it instead of racing it.
            await asyncio.wait((write,))
            if not write.cancelled():
                write.exception()  # retrieved here; the cancellation is what propagates
            raise

    async def lock(self, conversation_id: str) -> Callable[[], None]:
        """Wait for the turn lock of ``conversation_id``; returns the function that releases it."""
        entry = self._locks.get(conversation_id)
        if entry is None:
            entry = self._locks[conversation_id] = [asyncio.Lock(), 0]
        entry[1] += 1
        lock: asyncio.Lock = entry[0]
        try:
            await lock.acquire()
        except BaseException:
            self._unused(conversation_id, entry)
            raise

        def release() -> None:
            lock.release()
            self._unused(conversation_id, entry)

        return release

    def _unused(self, conversation_id: str, entry: list[Any]) -> None:
        entry[1] -= 1
        if entry[1] == 0 and self._locks.get(conversation_id) is entry:
            del self._locks[conversation_id]
