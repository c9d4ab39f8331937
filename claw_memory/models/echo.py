"""The offline default model: it answers with exactly the last user message it was given.

Because the reply is the input, tests and demos can see what reached the model (for instance
the recall block the engine prepended) without a network or an API key.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence

from claw_memory.models.base import ChatMessage, last_user_message

__all__ = ["EchoModel"]


class EchoModel:
    """Replies with the content of the last "user" message, streamed ``chunk_size`` characters
    at a time. It yields to the event loop between chunks, so a cancelled caller stops it at
    once, as it would a real model.
    """

    def __init__(self, chunk_size: int = 4, name: str = "echo") -> None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive int, not {chunk_size!r}")
        self.chunk_size = chunk_size
        self.name = name

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The last user message, whole."""
        return last_user_message(messages)

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncGenerator[str, None]:
        """The last user message in chunks of ``chunk_size`` characters (nothing for "")."""
        text = last_user_message(messages)
        for start in range(0, len(text), self.chunk_size):
            if start:
                await asyncio.sleep(0)
            yield text[start : start + self.chunk_size]

    def __repr__(self) -> str:
        return f"EchoModel(chunk_size={self.chunk_size}, name={self.name!r})"
