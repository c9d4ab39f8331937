"""The model contract: anything that turns a chat history into text, whole or streamed.

A model needs no base class: an object with ``name``, ``complete`` and ``stream`` will do, so
wrapping another client library is a few lines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, TypedDict, runtime_checkable

__all__ = ["ChatMessage", "Model", "last_user_message"]


class ChatMessage(TypedDict):
    """One message of a chat, in the OpenAI shape (``role`` is "system", "user", "assistant")."""

    role: str
    content: str


@runtime_checkable
class Model(Protocol):
    """A chat model.

    ``stream`` returns an async generator of text deltas whose concatenation equals what
    ``complete`` would return. A caller may stop early and call ``aclose()`` on it; the
    generator then releases its connection (in ``finally``) before ``aclose()`` returns.
    """

    name: str

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The whole reply."""
        ...

    def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        """The reply as it is produced, in text deltas."""
        ...


def last_user_message(messages: Sequence[ChatMessage]) -> str:
    """The content of the last message whose role is "user", or "" when there is none."""
    for message in reversed(messages):
        if message["role"] == "user":
            return message["content"]
    return ""
