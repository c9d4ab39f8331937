"""Conversations: persistence after the model, resuming, privacy and concurrent turns."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from ulid import ULID

from claw_memory import ArrayMemory, Hooks, Memory, PrivacyAwareMemory, hooks
from claw_memory.engine import Agent, Claw, Conversation, Turn
from claw_memory.errors import CorruptStoreError, ModelError
from claw_memory.models import ChatMessage
from tests.engine.fakes import FailingModel, RecordingModel, named, record


def agent_over(memory: Memory | None, model: Any = None, **options: Any) -> Agent:
    builder = Claw.builder().memory(memory).default_guards(False)
    if model is not None:
        builder.model(model)
    if "hooks" in options:
        builder.hooks(options["hooks"])
    if "store_messages" in options:
        builder.store_messages(options["store_messages"])
    return builder.build()


def roles_and_texts(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


def is_ulid(text: str) -> bool:
    return len(text) == 26 and str(ULID.from_str(text)) == text


def is_utc_iso(text: str) -> bool:
    moment = datetime.fromisoformat(text)
    return moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


class FixedModel:
    """Always answers ``reply``."""

    name = "fixed"

    def __init__(self, reply: str = "OK") -> None:
        self.reply = reply

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        return self.reply

    async def stream(self, messages: Sequence[ChatMessage]) -> Any:
        yield self.reply


class SetSpy(ArrayMemory):
    """Records the arguments of every ``set``."""

    def __init__(self) -> None:
        super().__init__()
        self.sets: list[tuple[str, str, Any]] = []

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        self.sets.append((key, namespace, ttl))
        await super().set(key, value, namespace, ttl)


async def test_two_turns_send_the_history_and_store_four_messages(store: Memory) -> None:
    model = RecordingModel()
    agent = agent_over(store, model)
    conversation = await agent.conversation()

    first = await agent.send_in_conversation(conversation, "My name is Alice.")
    second = await agent.send_in_conversation(first.conversation, "What is my name?")

    assert roles_and_texts(model.calls[1]) == [
        ("user", "My name is Alice."),
        ("assistant", "My name is Alice."),
        ("user", "What is my name?"),
    ]
    assert second.response.text == "What is my name?"
    assert [(m.role, m.content) for m in second.conversation.history] == [
        ("user", "My name is Alice."),
        ("assistant", "My name is Alice."),
        ("user", "What is my name?"),
        ("assistant", "What is my name?"),
    ]
    assert conversation.history == ()  # values never change
    assert len(first.conversation.history) == 2
    assert second.conversation.turn_count == 2
    stored = await store.get(conversation.id, "conversations")
    assert [m["content"] for m in stored["messages"]] == [
        m.content for m in second.conversation.history
    ]


async def test_the_document_has_the_agreed_shape_and_holds_the_raw_text(store: Memory) -> None:
    await store.set("tier", "gold tier customer")
    agent = agent_over(store, FixedModel("Your tier is gold."))
    conversation = await agent.conversation(title="Support", metadata={"user": {"id": 7}})

    turn = await agent.send_in_conversation(conversation, "What is my customer tier?")

    assert turn.response.recalled == ("tier",)  # the model saw the block ...
    document = await store.get(conversation.id, "conversations")
    assert set(document) == {"id", "created_at", "updated_at", "title", "metadata", "messages"}
    assert document["id"] == conversation.id
    assert is_ulid(document["id"])
    assert document["title"] == "Support"
    assert document["metadata"] == {"user": {"id": 7}}
    assert is_utc_iso(document["created_at"])
    assert is_utc_iso(document["updated_at"])
    assert document["updated_at"] >= document["created_at"]
    user, reply = document["messages"]
    for message in (user, reply):
        assert set(message) == {"id", "role", "content", "created_at", "name", "tool_call_id",
                                "tool_calls"}
        assert is_ulid(message["id"])
        assert is_utc_iso(message["created_at"])
        assert message["name"] is None
        assert message["tool_call_id"] is None
        assert message["tool_calls"] is None
    # ... but only the raw text and the reply are stored.
    assert (user["role"], user["content"]) == ("user", "What is my customer tier?")
    assert (reply["role"], reply["content"]) == ("assistant", "Your tier is gold.")
    assert user["id"] != reply["id"]


async def test_conversations_are_set_without_a_ttl_argument() -> None:
    memory = SetSpy()
    agent = agent_over(memory)
    conversation = await agent.conversation()
    await agent.send_in_conversation(conversation, "hello")
    assert memory.sets == [(conversation.id, "conversations", None)]


async def test_a_new_agent_resumes_a_conversation_by_id(store: Memory) -> None:
    first_agent = agent_over(store)
    started = await first_agent.conversation(metadata={"channel": "web"})
    turn = await first_agent.send_in_conversation(started, "My name is Alice.")

    model = RecordingModel()
    second_agent = agent_over(store, model)
    resumed = await second_agent.conversation(id=started.id)
    turn2 = await second_agent.send_in_conversation(resumed, "What is my name?")

    assert resumed == turn.conversation
    assert resumed.metadata == {"channel": "web"}
    assert roles_and_texts(model.calls[0])[:2] == [
        ("user", "My name is Alice."), ("assistant", "My name is Alice.")
    ]
    assert turn2.conversation.turn_count == 2


async def test_an_unknown_id_starts_a_new_conversation_with_a_new_id(store: Memory) -> None:
    hooks_ = Hooks()
    events = record(hooks_)
    agent = agent_over(store, hooks=hooks_)
    unknown = str(ULID())

    conversation = await agent.conversation(id=unknown)

    assert conversation.id != unknown
    assert is_ulid(conversation.id)
    assert conversation.history == ()
    assert [e["conversation_id"] for e in named(events, "conversation.start")] == [
        conversation.id
    ]
    await agent.send_in_conversation(conversation, "hi")
    resumed = await agent.conversation(id=conversation.id)
    assert resumed.id == conversation.id
    assert len(named(events, "conversation.start")) == 1  # resuming starts nothing


async def test_a_stale_conversation_value_appends_to_the_latest_stored_state(
    store: Memory,
) -> None:
    agent = agent_over(store)
    conversation = await agent.conversation()
    await agent.send_in_conversation(conversation, "one")

    turn = await agent.send_in_conversation(conversation, "two")  # the stale, empty value

    assert [m.content for m in turn.conversation.history] == ["one", "one", "two", "two"]


async def test_fifty_concurrent_turns_on_one_conversation_keep_a_hundred_messages(
    store: Memory,
) -> None:
    model = RecordingModel()
    agent = agent_over(store, model)
    conversation = await agent.conversation()

    turns = await asyncio.gather(
        *(agent.send_in_conversation(conversation, f"message {i}") for i in range(50))
    )

    stored = await agent.conversation(id=conversation.id)
    assert len(stored.history) == 100
    assert sorted(m.content for m in stored.history if m.role == "user") == sorted(
        f"message {i}" for i in range(50)
    )
    # Each turn saw every turn saved before it.
    assert sorted(len(call) for call in model.calls) == [2 * i + 1 for i in range(50)]
    assert max(len(t.conversation.history) for t in turns) == 100
    assert agent._store._locks == {}  # no lock left behind


async def test_store_messages_false_stores_nothing_but_keeps_the_history_in_hand(
    store: Memory,
) -> None:
    model = RecordingModel()
    agent = agent_over(store, model, store_messages=False)
    assert isinstance(agent.memory, PrivacyAwareMemory)
    assert agent.memory.inner is store

    conversation = await agent.conversation()
    first = await agent.send_in_conversation(conversation, "My name is Alice.")
    second = await agent.send_in_conversation(first.conversation, "What is my name?")

    assert await store.all("conversations") == {}
    assert len(second.conversation.history) == 4
    assert roles_and_texts(model.calls[1])[:2] == [
        ("user", "My name is Alice."), ("assistant", "My name is Alice.")
    ]
    resumed = await agent.conversation(id=conversation.id)
    assert resumed.id != conversation.id  # nothing was stored to resume


async def test_store_messages_false_still_recalls(store: Memory) -> None:
    await store.set("tier", "gold tier customer")
    agent = agent_over(store, store_messages=False)
    response = await agent.send("customer tier")
    assert response.recalled == ("tier",)


async def test_without_memory_a_conversation_lives_in_its_values() -> None:
    model = RecordingModel()
    agent = agent_over(None, model)
    conversation = await agent.conversation(id="anything")
    assert conversation.id != "anything"

    first = await agent.send_in_conversation(conversation, "one")
    second = await agent.send_in_conversation(first.conversation, "two")

    assert [m.content for m in second.conversation.history] == ["one", "one", "two", "two"]
    assert roles_and_texts(model.calls[1])[:2] == [("user", "one"), ("assistant", "one")]


async def test_a_failed_model_call_stores_nothing(store: Memory) -> None:
    agent = agent_over(store, FailingModel(RuntimeError("boom")))
    conversation = await agent.conversation()

    with pytest.raises(ModelError) as caught:
        await agent.send_in_conversation(conversation, "hello")

    assert isinstance(caught.value.__cause__, RuntimeError)
    assert await store.all("conversations") == {}
    assert agent._store._locks == {}


async def test_a_corrupt_document_is_reported_not_replaced() -> None:
    store = ArrayMemory()  # the SQL driver would refuse to store it in the first place
    await store.set("01J00000000000000000000000", {"not": "a conversation"}, "conversations")
    agent = agent_over(store)
    with pytest.raises(CorruptStoreError) as caught:
        await agent.conversation(id="01J00000000000000000000000")
    assert caught.value.namespace == "conversations"


async def test_memory_events_of_a_turn_carry_its_run_id_and_reach_the_agent_hooks(
    store: Memory,
) -> None:
    own = Hooks()
    events = record(own)
    elsewhere = record(hooks.default_hooks)
    agent = agent_over(store, hooks=own)
    conversation = await agent.conversation()

    turn = await agent.send_in_conversation(conversation, "hello")

    run = [e for e in events if e.get("run_id") == turn.response.run_id]
    names = [e["event"] for e in run]
    assert names[0] == "agent.before"
    assert names[-1] == "agent.after"
    assert {"memory.read", "memory.write", "memory.search"} <= set(names)
    write = named(run, "memory.write")[0]
    assert (write["key"], write["namespace"], write["ttl"]) == (
        conversation.id, "conversations", None
    )
    assert elsewhere == []


async def test_end_conversation_reports_turns_not_messages(store: Memory) -> None:
    own = Hooks()
    events = record(own)
    agent = agent_over(store, hooks=own)
    conversation = await agent.conversation()
    first = await agent.send_in_conversation(conversation, "one")
    await agent.send_in_conversation(first.conversation, "two")

    await agent.end_conversation(conversation)  # a stale value: the stored state counts

    (end,) = named(events, "conversation.end")
    assert end["conversation_id"] == conversation.id
    assert end["turn_count"] == 2
    assert end["duration_ms"] >= 0


def test_conversation_values_are_immutable() -> None:
    conversation = Conversation("01J00000000000000000000000", metadata={"a": {"b": [1]}})
    with pytest.raises(AttributeError):
        conversation.id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        conversation.metadata["a"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        conversation.metadata["a"]["b"] = 2
    assert conversation.to_document()["metadata"] == {"a": {"b": [1]}}


def test_a_document_round_trips() -> None:
    conversation = Conversation("01J00000000000000000000000", title="t", metadata={"k": [1, 2]})
    from claw_memory.engine.conversation import Message

    later = conversation.appended(Message("user", "hi"), Message("assistant", "hello"))
    assert Conversation.from_document(later.to_document()) == later
    assert later.updated_at is not None
    assert later.updated_at.tzinfo == UTC


async def test_the_turn_type_is_returned() -> None:
    agent = agent_over(ArrayMemory())
    turn = await agent.send_in_conversation(await agent.conversation(), "hi")
    assert isinstance(turn, Turn)
    assert turn.response.text == "hi"


class GatedSaveMemory(ArrayMemory):
    """Holds every conversation save until ``gate`` is set; ``saving`` tells it started."""

    def __init__(self) -> None:
        super().__init__()
        self.saving = asyncio.Event()
        self.gate = asyncio.Event()

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        if namespace == "conversations":
            self.saving.set()
            await self.gate.wait()
        await super().set(key, value, namespace, ttl)


async def test_a_save_in_flight_lands_before_the_next_turn_reads() -> None:
    memory = GatedSaveMemory()
    agent = agent_over(memory)
    conversation = await agent.conversation()
    first = asyncio.create_task(agent.send_in_conversation(conversation, "one"))
    async with asyncio.timeout(10):
        await memory.saving.wait()
    second = asyncio.create_task(agent.send_in_conversation(conversation, "two"))

    first.cancel()  # during its save: the save completes, the cancellation still propagates
    memory.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await first
    turn = await second

    assert [m.content for m in turn.conversation.history] == ["one", "one", "two", "two"]
