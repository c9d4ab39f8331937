"""Models: what the engine sends the (recall-augmented) message to.

:class:`EchoModel` is the offline default; :class:`OpenAICompatibleModel` talks to any
OpenAI-compatible chat-completions server. Any object with ``name``, ``complete`` and ``stream``
(see :class:`Model`) works as well.
"""

from __future__ import annotations

from claw_memory.models.base import ChatMessage, Model, last_user_message
from claw_memory.models.echo import EchoModel
from claw_memory.models.openai import RETRY_STATUSES, OpenAICompatibleModel

__all__ = [
    "RETRY_STATUSES",
    "ChatMessage",
    "EchoModel",
    "Model",
    "OpenAICompatibleModel",
    "last_user_message",
]
