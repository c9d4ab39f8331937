"""EchoModel: the offline default answers with exactly the last user message."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from claw_memory.models import ChatMessage, EchoModel, Model, last_user_message

WAIT = 5.0


async def test_complete_echoes_the_last_user_message_exactly() -> None:
    messages: list[ChatMessage] = [
        {"role": "system", "content": "system text"},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "an answer"},
        {"role": "user", "content": "  second\nquestion \u00e9\U0001f600  "},
        {"role": "assistant", "content": "a later assistant turn"},
    ]
    assert await EchoModel().complete(messages) == "  second\nquestion \u00e9\U0001f600  "


@pytest.mark.parametrize(
    "messages",
    [[], [{"role": "system", "content": "only system"}], [{"role": "assistant", "content": "x"}]],
)
async def test_no_user_message_gives_an_empty_reply(messages: list[ChatMessage]) -> None:
    model = EchoModel()
    assert await model.complete(messages) == ""
    assert [chunk async for chunk in model.stream(messages)] == []


@pytest.mark.parametrize(
    ("chunk_size", "expected"),
    [
        (4, ["hell", "o wo", "rld"]),
        (1, list("hello world")),
        (11, ["hello world"]),
        (50, ["hello world"]),
    ],
)
async def test_stream_yields_chunks_of_chunk_size(chunk_size: int, expected: list[str]) -> None:
    model = EchoModel(chunk_size=chunk_size)
    messages: list[ChatMessage] = [{"role": "user", "content": "hello world"}]
    chunks = [chunk async for chunk in model.stream(messages)]
    assert chunks == expected
    assert "".join(chunks) == await model.complete(messages)


async def test_early_break_stops_the_stream() -> None:
    model = EchoModel(chunk_size=2)
    stream = model.stream([{"role": "user", "content": "abcdefgh"}])
    async with contextlib.aclosing(stream):
        assert await anext(stream) == "ab"
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_a_consumer_can_be_cancelled_mid_stream() -> None:
    model = EchoModel(chunk_size=1)
    received: list[str] = []
    first = asyncio.Event()

    async def consume() -> None:
        async for chunk in model.stream([{"role": "user", "content": "x" * 10_000}]):
            received.append(chunk)
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The model yielded to the loop between chunks, so the cancel landed long before the end.
    assert 1 <= len(received) < 10_000


def test_name_protocol_and_validation() -> None:
    assert EchoModel().name == "echo"
    assert EchoModel(name="mirror").name == "mirror"
    assert isinstance(EchoModel(), Model)
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError):
            EchoModel(chunk_size=bad)  # type: ignore[arg-type]


def test_last_user_message_helper() -> None:
    assert last_user_message([{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}])
    assert last_user_message([{"role": "tool", "content": "b"}]) == ""
