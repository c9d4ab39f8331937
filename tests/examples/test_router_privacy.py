"""examples/router_privacy.py: conversations in Redis, facts in SQL, scratch in process."""

from __future__ import annotations

from pathlib import Path

import pytest

from claw_memory import ArrayMemory
from claw_memory.drivers.redis import RedisMemory
from claw_memory.drivers.sql import SqlMemory
from tests.examples._load import load_example

router_privacy = load_example("router_privacy")


async def test_each_namespace_lands_in_its_own_store_and_private_turns_nowhere(
    redis_memory: RedisMemory, tmp_path: Path
) -> None:
    scratch = ArrayMemory()
    async with SqlMemory(f"sqlite+aiosqlite:///{tmp_path / 'facts.db'}") as facts:
        memory = router_privacy.build_memory(redis_memory, facts, scratch)
        outcome = await router_privacy.demo(memory)

        # Facts went to SQL (and only there), scratch to the process.
        assert await facts.all() == router_privacy.FACTS
        assert await redis_memory.all() == {}
        assert await scratch.all("scratch") == {"draft": {"step": 1, "notes": ["ask about tier"]}}
        assert await facts.has("draft", "scratch") is False

        # The stored conversation is in Redis, not in SQL; the private one is nowhere.
        stored = await redis_memory.get(outcome.stored_conversation, "conversations")
        assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
        assert stored["messages"][0]["content"] == router_privacy.QUESTION
        assert await facts.has(outcome.stored_conversation, "conversations") is False
        assert await redis_memory.has(outcome.private_conversation, "conversations") is False
        assert await facts.has(outcome.private_conversation, "conversations") is False
        assert outcome.private_memory_is_wrapped

        # Both agents recalled the facts from SQL: the echo model shows the same block.
        for reply in (outcome.reply, outcome.private_reply):
            assert "- discount_rule: gold customer discount is 10 percent" in reply
            assert "- customer_tier: gold tier customer" in reply
            assert "preferred_language" not in reply


async def test_main_reports_where_things_went(
    redis_memory: RedisMemory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = await router_privacy.main(
        redis_memory, f"sqlite+aiosqlite:///{tmp_path / 'main.db'}"
    )
    out = capsys.readouterr().out
    assert ("routes: {'conversations': 'RedisMemory', 'default': 'SqlMemory', "
            "'scratch': 'ArrayMemory'}") in out
    assert f"stored conversation {outcome.stored_conversation}: kept = True" in out
    assert f"private conversation {outcome.private_conversation}: kept = False" in out
