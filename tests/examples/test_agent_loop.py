"""examples/agent_loop.py: facts learnt in one step are stored and recalled in later ones."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from claw_memory.drivers.file import FileMemory
from claw_memory.models import OpenAICompatibleModel
from tests.cli.fake_openai import FakeOpenAI
from tests.examples._load import load_example

agent_loop = load_example("agent_loop")


def test_fact_lines_are_parsed_from_a_reply() -> None:
    reply = "Sure.\nFACT owner: the owner is Sam\nnot a FACT x: y\nFACT  bad key: no\nFACT k:v\n"
    assert agent_loop.facts_in(reply) == [("owner", "the owner is Sam"), ("k", "v")]


async def test_later_steps_recall_what_earlier_steps_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = time.time()
    steps = await agent_loop.main(str(tmp_path / "store"))
    assert [step.stored for step in steps] == [["deploy_target"], ["release_manager"], []]
    assert steps[0].recalled == ()
    assert set(steps[2].recalled) == {"deploy_target", "release_manager"}
    # The echo model shows what the model was given: both facts in front of the question.
    assert "- release_manager: the release manager for this sprint is Dana" in steps[2].reply
    assert "- deploy_target: the deploy target is the staging-eu cluster" in steps[2].reply
    assert "recalled ['deploy_target', 'release_manager']" in capsys.readouterr().out

    async with FileMemory(tmp_path / "store") as memory:
        entries = {entry.key: entry for entry in await memory.entries()}
        assert set(entries) == {"deploy_target", "release_manager"}
        for entry in entries.values():
            assert entry.expires_at is not None
            expires = entry.expires_at.timestamp()
            assert before + agent_loop.FACT_TTL <= expires <= time.time() + agent_loop.FACT_TTL
        # The whole run was one stored conversation of three turns.
        conversations = await memory.entries("conversations")
        assert len(conversations) == 1
        assert len(conversations[0].value["messages"]) == 6


async def test_a_second_run_starts_with_the_facts_of_the_first(tmp_path: Path) -> None:
    await agent_loop.main(str(tmp_path / "store"))
    again = await agent_loop.main(str(tmp_path / "store"))
    assert "deploy_target" in again[0].recalled


async def test_the_loop_works_with_an_openai_compatible_model(tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        async with OpenAICompatibleModel(server.base_url, "fake") as model:
            steps = await agent_loop.main(str(tmp_path / "store"), model=model)
        assert [step.stored for step in steps] == [["deploy_target"], ["release_manager"], []]
        assert server.requests[0]["messages"][0] == {
            "role": "system", "content": agent_loop.SYSTEM_PROMPT,
        }
