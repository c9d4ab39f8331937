"""An async agent loop that stores what it learns between steps and recalls it later.

Each step sends one message through the agent. The agent is told to state anything worth keeping
on a line of its own, ``FACT key: text``; the loop stores those lines in memory (namespace
``default``, with a TTL), and the engine's recall puts the relevant ones in front of later
messages, so step 3 can answer from what steps 1 and 2 found out::

    python examples/agent_loop.py                          # offline, EchoModel, a temporary store
    CLAW_MODEL=gpt-4o-mini OPENAI_API_KEY=… python examples/agent_loop.py

With the offline ``EchoModel`` the reply is the message the model was given, so the output shows
exactly what recall injected at each step.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

from claw_memory import Memory
from claw_memory.drivers.file import FileMemory
from claw_memory.engine import Agent, Claw
from claw_memory.models import EchoModel, Model, OpenAICompatibleModel

SYSTEM_PROMPT = (
    "You are a careful operations assistant. When you learn something worth remembering, "
    "write it on a line of its own as: FACT <key>: <text>. Use what the memory context says."
)

#: A small task: two observations, then a question only the stored facts can answer.
STEPS: tuple[str, ...] = (
    "Read the deploy log.\nFACT deploy_target: the deploy target is the staging-eu cluster",
    "Read the sprint page.\nFACT release_manager: the release manager for this sprint is Dana",
    "Who is the release manager, and which cluster is the deploy target?",
)

#: How long a learnt fact is kept (seconds).
FACT_TTL = 7 * 24 * 3600

_FACT = re.compile(r"^FACT\s+([A-Za-z0-9_.:-]{1,64}):\s*(.+?)\s*$", re.MULTILINE)


@dataclass
class Step:
    """What one step sent, got back, recalled and stored."""

    message: str
    reply: str
    recalled: tuple[str, ...]
    stored: list[str] = field(default_factory=list)


def facts_in(text: str) -> list[tuple[str, str]]:
    """The ``FACT key: text`` lines of a reply, in order."""
    return [(match.group(1), match.group(2)) for match in _FACT.finditer(text)]


async def run_steps(agent: Agent, memory: Memory, steps: Sequence[str]) -> list[Step]:
    """Run ``steps`` in one conversation, storing the facts each reply states."""
    conversation = await agent.conversation()
    done: list[Step] = []
    for message in steps:
        turn = await agent.send_in_conversation(conversation, message)
        conversation = turn.conversation
        step = Step(message, turn.response.text, turn.response.recalled)
        for key, text in facts_in(turn.response.text):
            await memory.set(key, text, ttl=FACT_TTL)
            step.stored.append(key)
        done.append(step)
    return done


def model_from_environment() -> Model:
    name = os.environ.get("CLAW_MODEL", "echo")
    if name == "echo":
        return EchoModel()
    base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    return OpenAICompatibleModel(base_url, name, api_key=os.environ.get("OPENAI_API_KEY"))


async def main(storage_dir: str | None = None, model: Model | None = None) -> list[Step]:
    """Run the task against a FileMemory in ``storage_dir`` (a temporary one by default)."""
    chosen = model or model_from_environment()
    with tempfile.TemporaryDirectory(prefix="claw-agent-") as scratch:
        async with FileMemory(storage_dir or scratch) as memory:
            agent = (
                Claw.builder()
                .model(chosen)
                .memory(memory)
                .system_prompt(SYSTEM_PROMPT)
                .long_term_memory(3)
                .build()
            )
            try:
                steps = await run_steps(agent, memory, STEPS)
            finally:
                if isinstance(chosen, OpenAICompatibleModel) and model is None:
                    await chosen.aclose()
    for number, step in enumerate(steps, 1):
        print(f"--- step {number}: recalled {list(step.recalled) or 'nothing'}, "
              f"stored {step.stored or 'nothing'}")
        print(step.reply)
    return steps


if __name__ == "__main__":
    asyncio.run(main())
