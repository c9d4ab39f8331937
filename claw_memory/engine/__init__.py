"""The engine: agents that run recall, guards, the model and conversation persistence.

``Claw.builder()...build()`` gives an :class:`Agent`. Each call runs one pipeline, assembled
once per agent (:mod:`claw_memory.engine.stages`): recall -> guard scan -> model call ->
conversation persistence, for ``send`` and ``stream`` alike.
"""

from __future__ import annotations

from claw_memory.engine.agent import Agent
from claw_memory.engine.builder import Claw, ClawBuilder
from claw_memory.engine.conversation import Conversation, Message, Response, Turn
from claw_memory.engine.streaming import ResponseStream, TurnStream

__all__ = [
    "Agent",
    "Claw",
    "ClawBuilder",
    "Conversation",
    "Message",
    "Response",
    "ResponseStream",
    "Turn",
    "TurnStream",
]
