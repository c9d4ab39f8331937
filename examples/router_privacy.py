"""One memory over three stores, and the same memory with message storage switched off.

``RouterMemory`` sends each namespace to its own driver: conversations to Redis (shared by every
server, expiring on their own), facts (namespace ``default``, what recall reads) to SQL, and
scratch work to the process. An agent built with ``.store_messages(False)`` wraps that memory
in ``PrivacyAwareMemory``: it still recalls the stored facts, but writes nothing, so its
conversations are kept nowhere.

    python examples/router_privacy.py        # REDIS_URL, and CLAW_SQL_URL (default: a SQLite file)
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass

from claw_memory import ArrayMemory, Memory, PrivacyAwareMemory, RouterMemory
from claw_memory.engine import Claw

FACTS = {
    "customer_tier": "gold tier customer",
    "discount_rule": "gold customer discount is 10 percent",
    "preferred_language": "French language preferred",
}
QUESTION = "What discount do I get for my customer tier?"


def build_memory(
    conversations: Memory, facts: Memory, scratch: Memory | None = None
) -> RouterMemory:
    """Conversations in ``conversations``, scratch in process, everything else in ``facts``."""
    return RouterMemory(
        facts,
        routes={"conversations": conversations, "scratch": scratch or ArrayMemory()},
    )


@dataclass
class Outcome:
    """What the demo did: the two conversations and what the agents saw."""

    stored_conversation: str
    private_conversation: str
    reply: str
    private_reply: str
    private_memory_is_wrapped: bool


async def demo(memory: RouterMemory) -> Outcome:
    """Store facts and scratch, then hold one stored and one private conversation."""
    for key, text in FACTS.items():
        await memory.set(key, text)  # namespace "default": routed to SQL
    await memory.set("draft", {"step": 1, "notes": ["ask about tier"]}, "scratch")

    agent = Claw.builder().memory(memory).build()
    conversation = await agent.conversation()
    turn = await agent.send_in_conversation(conversation, QUESTION)

    private = Claw.builder().memory(memory).store_messages(False).build()
    secret = await private.conversation()
    private_turn = await private.send_in_conversation(secret, QUESTION)

    return Outcome(
        stored_conversation=turn.conversation.id,
        private_conversation=private_turn.conversation.id,
        reply=turn.response.text,
        private_reply=private_turn.response.text,
        private_memory_is_wrapped=isinstance(private.memory, PrivacyAwareMemory),
    )


async def main(conversations: Memory | None = None, sql_url: str | None = None) -> Outcome:
    """Run the demo: conversations in ``conversations`` (default: ``RedisMemory`` on
    ``$REDIS_URL``), facts in ``sql_url`` (default: ``$CLAW_SQL_URL``, else a SQLite file)."""
    from claw_memory.drivers.sql import SqlMemory

    owned: list[Memory] = []
    if conversations is None:
        from claw_memory.drivers.redis import RedisMemory

        conversations = RedisMemory(url=os.environ.get("REDIS_URL"), default_ttl=7 * 86400)
        owned.append(conversations)
    with tempfile.TemporaryDirectory(prefix="claw-router-") as scratch_dir:
        facts = SqlMemory(
            sql_url or os.environ.get("CLAW_SQL_URL")
            or f"sqlite+aiosqlite:///{scratch_dir}/facts.db"
        )
        owned.append(facts)
        try:
            memory = build_memory(conversations, facts)
            outcome = await demo(memory)
            where = {ns: type(memory.driver_for(ns)).__name__
                     for ns in ("conversations", "default", "scratch")}
            print(f"routes: {where}")
            for label, conversation_id in (("stored", outcome.stored_conversation),
                                           ("private", outcome.private_conversation)):
                kept = await conversations.has(conversation_id, "conversations")
                print(f"{label} conversation {conversation_id}: kept = {kept}")
            print("what the model was given, with and without storage:")
            print(outcome.private_reply)
        finally:
            for driver in owned:
                await driver.aclose()
    return outcome


if __name__ == "__main__":
    asyncio.run(main())
