"""Events: subscription, sync and async handlers, faulty handlers, run ids, per-object hooks."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from claw_memory import ArrayMemory, Hooks, hooks


async def test_sync_and_async_handlers_receive_the_payload_with_its_name() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def sync_handler(payload: dict[str, Any]) -> None:
        seen.append(("sync", dict(payload)))

    async def async_handler(payload: dict[str, Any]) -> None:
        seen.append(("async", dict(payload)))

    hooks.on("memory.write", sync_handler)
    hooks.on("memory.write", async_handler)
    await ArrayMemory().set("k", "v", ttl=5)
    assert [who for who, _ in seen] == ["sync", "async"]
    assert seen[0][1] == {
        "event": "memory.write", "key": "k", "namespace": "default", "driver": "array", "ttl": 5,
    }


async def test_a_raising_handler_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def broken(payload: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    hooks.on("memory.read", broken)
    hooks.on("memory.read", lambda payload: calls.append(payload["key"]))
    memory = ArrayMemory()
    await memory.set("k", 1)
    with caplog.at_level(logging.ERROR, logger="claw_memory.hooks"):
        assert await memory.get("k") == 1
    assert calls == ["k"]
    assert "RuntimeError" in caplog.text


async def test_off_unsubscribes() -> None:
    calls: list[str] = []

    def handler(payload: dict[str, Any]) -> None:
        calls.append(payload["event"])

    hooks.on("memory.forget", handler)
    memory = ArrayMemory()
    await memory.forget("k")
    hooks.off("memory.forget", handler)
    await memory.forget("k")
    assert calls == ["memory.forget"]
    assert not hooks.default_hooks.has_handlers("memory.forget")


async def test_a_driver_with_its_own_hooks_fires_there_only() -> None:
    own = Hooks()
    mine: list[str] = []
    default: list[str] = []
    own.on("memory.write", lambda payload: mine.append(payload["key"]))
    hooks.on("memory.write", lambda payload: default.append(payload["key"]))
    await ArrayMemory(hooks=own).set("a", 1)
    await ArrayMemory().set("b", 2)
    assert mine == ["a"]
    assert default == ["b"]
    own.clear()


async def test_run_id_and_call_hooks_come_from_context() -> None:
    call_hooks = Hooks()
    seen: list[dict[str, Any]] = []
    call_hooks.on("memory.read", lambda payload: seen.append(dict(payload)))
    run_token = hooks.current_run_id.set("RUN-1")
    hooks_token = hooks.current_hooks.set(call_hooks)
    try:
        await ArrayMemory().get("k")
    finally:
        hooks.current_hooks.reset(hooks_token)
        hooks.current_run_id.reset(run_token)
    assert seen
    assert seen[0]["run_id"] == "RUN-1"
    call_hooks.clear()


def test_on_rejects_non_callables() -> None:
    with pytest.raises(TypeError):
        hooks.on("x", "not callable")  # type: ignore[call-overload]


async def test_on_works_as_a_decorator() -> None:
    seen: list[str] = []

    @hooks.on("memory.write")
    def record(payload: dict[str, Any]) -> None:
        seen.append(payload["key"])

    await ArrayMemory().set("decorated", 1)
    assert seen == ["decorated"]
    assert callable(record)
