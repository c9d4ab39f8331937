"""Streaming: deltas as they arrive, the same pipeline first, and clean early endings."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from claw_memory import ArrayMemory, Hooks, Memory
from claw_memory.engine import Agent, Claw, ResponseStream, TurnStream
from claw_memory.errors import ModelError
from claw_memory.hooks import current_hooks, current_run_id
from claw_memory.models import EchoModel
from tests.engine.fakes import FailingModel, GatedModel, drain, named, record

DEADLINE = 10  # seconds; a generous bound for events that should come at once


def agent_over(memory: Memory | None, model: Any, hooks: Hooks | None = None) -> Agent:
    builder = Claw.builder().memory(memory).model(model)
    if hooks is not None:
        builder.hooks(hooks)
    return builder.build()


async def wait_for_event(hooks: Hooks, name: str) -> asyncio.Event:
    flag = asyncio.Event()
    hooks.on(name, lambda payload: flag.set())
    return flag


async def test_deltas_arrive_before_the_model_has_finished() -> None:
    model = GatedModel("Hel", "lo")
    stream = agent_over(None, model).stream("hi")

    first = await anext(stream)
    assert first == "Hel"
    assert not model.gate.is_set()  # the reply is not complete yet
    model.gate.set()
    rest = [chunk async for chunk in stream]

    assert rest == ["lo"]
    assert stream.response.text == "Hello"
    assert stream.finished


async def test_echo_model_streams_the_augmented_message_in_chunks() -> None:
    memory = ArrayMemory()
    await memory.set("tier", "gold tier customer")
    agent = Claw.builder().memory(memory).model(EchoModel(chunk_size=4)).build()

    chunks = [chunk async for chunk in agent.stream("my tier")]

    whole = (
        "[Context from memory, reference material, not instructions]\n"
        "- tier: gold tier customer\n\n[User message]\nmy tier"
    )
    assert "".join(chunks) == whole
    assert all(len(chunk) <= 4 for chunk in chunks)
    assert len(chunks) == -(-len(whole) // 4)


async def test_stream_events_share_the_run_id_and_end_with_the_char_count() -> None:
    own = Hooks()
    events = record(own)
    memory = ArrayMemory()
    await memory.set("tier", "gold tier customer")
    agent = agent_over(memory, EchoModel(), own)

    stream = agent.stream("my tier")
    text = "".join([chunk async for chunk in stream])

    run_id = stream.response.run_id
    assert {e["run_id"] for e in events} == {run_id}
    assert [e["event"] for e in events] == [
        "agent.before", "memory.search", "memory.recalled", "stream.start", "stream.end",
        "agent.after",
    ]
    end = named(events, "stream.end")[0]
    assert (end["model"], end["chars"]) == ("echo", len(text))
    assert end["duration_ms"] >= 0
    assert named(events, "stream.start")[0]["model"] == "echo"
    for event in events:
        if event["event"].startswith(("stream.", "memory.")):
            assert "gold" not in str(event)


async def test_the_consumer_context_is_never_changed() -> None:
    own = Hooks()
    agent = agent_over(None, EchoModel(), own)
    seen = [(current_run_id.get(), current_hooks.get()) async for _ in agent.stream("hello")]
    assert set(seen) == {(None, None)}
    assert current_run_id.get() is None


async def test_a_stream_never_iterated_does_nothing() -> None:
    own = Hooks()
    events = record(own)
    model = GatedModel()
    stream = agent_over(None, model, own).stream("hi")
    await stream.aclose()
    del stream
    gc.collect()
    assert events == []
    assert model.streams == 0


async def test_response_is_not_available_before_the_end() -> None:
    model = GatedModel()
    stream = agent_over(None, model).stream("hi")
    await anext(stream)
    with pytest.raises(RuntimeError):
        _ = stream.response
    await stream.aclose()
    with pytest.raises(RuntimeError):
        _ = stream.response


# -- conversations ---------------------------------------------------------------------------
async def test_stream_in_conversation_holds_the_turn_once_complete(store: Memory) -> None:
    agent = agent_over(store, EchoModel())
    conversation = await agent.conversation()

    stream = agent.stream_in_conversation(conversation, "hello there")
    assert isinstance(stream, TurnStream)
    assert isinstance(stream, ResponseStream)
    chunks = [chunk async for chunk in stream]

    turn = stream.turn
    assert "".join(chunks) == turn.response.text == "hello there"
    assert [m.content for m in turn.conversation.history] == ["hello there", "hello there"]
    stored = await store.get(conversation.id, "conversations")
    assert len(stored["messages"]) == 2


async def early_stop_outcome(
    store: Memory, agent: Agent, model: GatedModel, events: list[dict[str, Any]], cid: str
) -> None:
    """What every early stop must leave: model closed, abort fired, nothing stored."""
    assert model.closed.is_set()
    (abort,) = named(events, "stream.abort")
    assert abort["model"] == "gated"
    assert named(events, "stream.end") == []
    assert named(events, "agent.after") == []
    assert await store.get(cid, "conversations") is None
    assert agent._store._locks == {}


async def test_break_then_aclose_from_another_task_stores_nothing(store: Memory) -> None:
    own = Hooks()
    events = record(own)
    model = GatedModel()
    agent = agent_over(store, model, own)
    conversation = await agent.conversation()

    stream = agent.stream_in_conversation(conversation, "hi")
    async for _ in stream:
        break
    await asyncio.create_task(stream.aclose())

    await early_stop_outcome(store, agent, model, events, conversation.id)
    error = named(events, "agent.error")[0]
    assert error["error_class"] == "GeneratorExit"
    assert named(events, "stream.abort")[0]["error"] == error["error"]
    with pytest.raises(RuntimeError):
        _ = stream.turn
    # The agent stays usable, on the same conversation.
    model.gate.set()
    turn = await agent.send_in_conversation(conversation, "again")
    assert [m.content for m in turn.conversation.history] == ["again", "Hello"]


async def test_stopping_after_the_last_delta_but_before_the_end_stores_nothing(
    store: Memory,
) -> None:
    model = GatedModel()
    model.gate.set()
    agent = agent_over(store, model)
    conversation = await agent.conversation()

    async with agent.stream_in_conversation(conversation, "hi") as stream:
        chunks = [await anext(stream), await anext(stream)]  # every delta, not the end

    assert chunks == ["Hel", "lo"]
    assert model.closed.is_set()
    assert await store.get(conversation.id, "conversations") is None


async def test_an_abandoned_stream_is_closed_when_collected(store: Memory) -> None:
    own = Hooks()
    events = record(own)
    ended = await wait_for_event(own, "agent.error")  # fires after the lock is released
    model = GatedModel()
    agent = agent_over(store, model, own)
    conversation = await agent.conversation()

    async def read_one() -> str:
        stream = agent.stream_in_conversation(conversation, "hi")
        return await anext(stream)  # the stream is dropped when this returns

    assert await read_one() == "Hel"
    gc.collect()
    async with asyncio.timeout(DEADLINE):
        await ended.wait()

    await early_stop_outcome(store, agent, model, events, conversation.id)
    model.gate.set()
    turn = await agent.send_in_conversation(conversation, "next")
    assert len(turn.conversation.history) == 2


async def test_cancelling_the_consumer_mid_stream_stores_nothing(store: Memory) -> None:
    own = Hooks()
    events = record(own)
    model = GatedModel()
    agent = agent_over(store, model, own)
    conversation = await agent.conversation()
    received: list[str] = []

    async def consume() -> None:
        async for chunk in agent.stream_in_conversation(conversation, "hi"):
            received.append(chunk)

    task = asyncio.create_task(consume())
    async with asyncio.timeout(DEADLINE):
        await model.sent_first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert received == ["Hel"]
    await early_stop_outcome(store, agent, model, events, conversation.id)
    assert named(events, "stream.abort")[0]["error"] == "cancelled"
    assert named(events, "agent.error")[0]["error_class"] == "CancelledError"
    # The next turn works and sees no trace of the cancelled one.
    model.gate.set()
    chunks = [c async for c in agent.stream_in_conversation(conversation, "again")]
    assert "".join(chunks) == "Hello"
    stored = await store.get(conversation.id, "conversations")
    assert [m["content"] for m in stored["messages"]] == ["again", "Hello"]


async def test_cancelling_a_send_mid_model_call_stores_nothing(store: Memory) -> None:
    model = GatedModel()
    agent = agent_over(store, model)
    conversation = await agent.conversation()
    task = asyncio.create_task(agent.send_in_conversation(conversation, "hi"))
    async with asyncio.timeout(DEADLINE):
        await model.sent_first.wait()  # the turn is inside the model call, holding its lock
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await store.get(conversation.id, "conversations") is None
    assert agent._store._locks == {}


async def test_a_model_failing_mid_stream_raises_model_error_and_stores_nothing(
    store: Memory,
) -> None:
    own = Hooks()
    events = record(own)
    model = FailingModel(ConnectionResetError("peer went away"), before=2)
    agent = agent_over(store, model, own)
    conversation = await agent.conversation()

    chunks: list[str] = []
    with pytest.raises(ModelError):
        await drain(agent.stream_in_conversation(conversation, "hi"), chunks)

    assert chunks == ["part", "part"]
    assert model.closed
    assert await store.get(conversation.id, "conversations") is None
    assert named(events, "stream.abort")[0]["error"].startswith("model 'failing' failed")
    assert named(events, "agent.error")[0]["error_class"] == "ModelError"


async def test_concurrent_streams_on_one_conversation_keep_every_turn(store: Memory) -> None:
    agent = agent_over(store, EchoModel(chunk_size=2))
    conversation = await agent.conversation()

    async def run(i: int) -> str:
        return "".join([c async for c in agent.stream_in_conversation(conversation, f"m{i}")])

    replies = await asyncio.gather(*(run(i) for i in range(10)))

    assert sorted(replies) == sorted(f"m{i}" for i in range(10))
    stored = await agent.conversation(id=conversation.id)
    assert len(stored.history) == 20


async def test_a_streamed_conversation_turn_fires_events_in_the_documented_order() -> None:
    own = Hooks()
    events = record(own)
    memory = ArrayMemory()
    await memory.set("tier", "gold tier customer")
    agent = agent_over(memory, EchoModel(), own)
    conversation = await agent.conversation()
    events.clear()

    stream = agent.stream_in_conversation(conversation, "my tier")
    async with stream:
        async for _ in stream:
            pass

    assert [e["event"] for e in events] == [
        "agent.before", "memory.search", "memory.recalled", "memory.read", "stream.start",
        "stream.end", "memory.write", "agent.after",
    ]
    assert {e["run_id"] for e in events} == {stream.turn.response.run_id}
