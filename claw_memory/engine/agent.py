"""``Agent``: what an application talks to. Build one with ``Claw.builder()...build()``.

Every call (``send``, ``stream`` and their conversation forms) runs the same pipeline
(:mod:`claw_memory.engine.stages`) under a fresh ``run_id``. For the duration of the call the
``current_run_id`` and ``current_hooks`` context variables are set, so the ``memory.*`` events
the call causes carry the call's ``run_id`` and reach the agent's hooks.

An agent is safe to share between concurrent tasks. It does not own the model or the memory it
was given: close those yourself when you are done with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import TracebackType
from typing import Any

from claw_memory import hooks as _hooks
from claw_memory.contracts import Memory
from claw_memory.engine.conversation import (
    Conversation,
    ConversationStore,
    Response,
    Turn,
    new_id,
    utc_now,
)
from claw_memory.engine.stages import Pipeline, TurnContext, assemble
from claw_memory.engine.streaming import ResponseStream, TurnStream
from claw_memory.guards import GuardSet
from claw_memory.hooks import Hooks, current_hooks, current_run_id
from claw_memory.models import Model

__all__ = ["Agent"]


def _text(message: object) -> str:
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, not {type(message).__name__}")
    return message


def _conversation(conversation: object) -> Conversation:
    if not isinstance(conversation, Conversation):
        raise TypeError(
            f"conversation must be a Conversation (from agent.conversation()), "
            f"not {type(conversation).__name__}"
        )
    return conversation


class _CallScope:
    """Sets the call's run id and hooks in the current context, and restores them on exit."""

    __slots__ = ("_hooks", "_hooks_token", "_run_id", "_run_token")

    def __init__(self, run_id: str, hooks: Hooks | None) -> None:
        self._run_id = run_id
        self._hooks = hooks

    def __enter__(self) -> None:
        self._run_token = current_run_id.set(self._run_id)
        self._hooks_token = current_hooks.set(self._hooks)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        current_hooks.reset(self._hooks_token)
        current_run_id.reset(self._run_token)


class Agent:
    """Sends messages through recall, guards, the model and conversation persistence.

    Build one with ``Claw.builder()``; constructed directly it takes the settings as they
    are (no default guards, no privacy wrapper). ``memory`` is the effective memory (the
    :class:`~claw_memory.PrivacyAwareMemory` wrapper when message storage is off), or ``None``.
    """

    __slots__ = (
        "_conversational",
        "_guards",
        "_hooks",
        "_memory",
        "_model",
        "_model_name",
        "_plain",
        "_store",
    )

    def __init__(
        self,
        *,
        model: Model,
        memory: Memory | None,
        long_term_memory: int = 3,
        guards: GuardSet | None = None,
        hooks: Hooks | None = None,
        system_prompt: str | None = None,
    ) -> None:
        self._model = model
        self._model_name = str(model.name)
        self._memory = memory
        self._guards = guards if guards is not None else GuardSet()
        self._hooks = hooks
        self._store = ConversationStore(memory)
        self._plain, self._conversational = assemble(
            model=model,
            memory=memory,
            recall_limit=max(long_term_memory, 0),
            guards=self._guards,
            hooks=hooks,
            system_prompt=system_prompt,
            store=self._store,
        )

    @property
    def memory(self) -> Memory | None:
        """The memory the agent reads and writes (the privacy wrapper when storage is off)."""
        return self._memory

    @property
    def model(self) -> Model:
        return self._model

    @property
    def guard_names(self) -> list[str]:
        """The names of the guards every message passes, in the order they run."""
        return self._guards.names()

    # -- single messages -----------------------------------------------------------------------
    async def send(self, message: str) -> Response:
        """Run the pipeline for ``message`` and return the model's whole reply.

        Raises :class:`~claw_memory.errors.GuardBlockedError` when a guard refuses the message
        (nothing reaches the model) and :class:`~claw_memory.errors.ModelError` when the model
        fails.
        """
        turn = TurnContext(_text(message), new_id())
        await self._run(self._plain, turn)
        return turn.response(self._model_name)

    def stream(self, message: str) -> ResponseStream:
        """Run the pipeline for ``message`` and yield the reply's text deltas as they arrive.

        Nothing runs until the first ``async for`` step; recall and guards run before the
        first delta, and a guard block is raised from that step.
        """
        return ResponseStream(
            self._plain, TurnContext(_text(message), new_id()), self._hooks, self._model_name
        )

    # -- conversations -------------------------------------------------------------------------
    async def conversation(
        self,
        id: str | None = None,  # the public name, shadowing the builtin on purpose
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Conversation:
        """Resume the stored conversation ``id``, or start a new one.

        An unknown ``id`` (or any ``id`` when the agent has no memory) starts a new
        conversation with a **new** id: compare ids to tell. ``title`` and ``metadata`` apply
        to new conversations; a new conversation is stored with its first turn.
        """
        if id is not None and not isinstance(id, str):
            raise TypeError(f"id must be a str or None, not {type(id).__name__}")
        if title is not None and not isinstance(title, str):
            raise TypeError(f"title must be a str or None, not {type(title).__name__}")
        with _CallScope(new_id(), self._hooks):
            if id is not None:
                stored = await self._store.load(id)
                if stored is not None:
                    return stored
            conversation = Conversation(new_id(), title=title, metadata=metadata or {})
            if _hooks.active():
                await _hooks.emit(
                    "conversation.start", {"conversation_id": conversation.id}, self._hooks
                )
            return conversation

    async def send_in_conversation(self, conversation: Conversation, message: str) -> Turn:
        """Send ``message`` as the next turn of ``conversation``; returns the response and the
        conversation including this turn (stored, when the agent has a memory).

        The turn extends the latest stored state of the conversation, even when
        ``conversation`` is an older value; with nothing stored, it extends ``conversation``.
        """
        turn = TurnContext(_text(message), new_id(), _conversation(conversation))
        await self._run(self._conversational, turn)
        assert turn.updated is not None
        return Turn(turn.response(self._model_name), turn.updated)

    def stream_in_conversation(self, conversation: Conversation, message: str) -> TurnStream:
        """Like :meth:`send_in_conversation`, streamed: ``.turn`` holds the Turn at the end."""
        turn = TurnContext(_text(message), new_id(), _conversation(conversation))
        return TurnStream(self._conversational, turn, self._hooks, self._model_name)

    async def end_conversation(self, conversation: Conversation) -> None:
        """Fire ``conversation.end`` for ``conversation``; nothing is stored or removed.

        The payload counts the turns of the latest state known (stored or passed) and the
        time since the conversation was created.
        """
        passed = _conversation(conversation)
        with _CallScope(new_id(), self._hooks):
            latest = await self._store.latest(passed)
            if _hooks.active():
                await _hooks.emit(
                    "conversation.end",
                    {"conversation_id": latest.id, "turn_count": latest.turn_count,
                     "duration_ms": _elapsed_ms(latest.created_at)},
                    self._hooks,
                )

    async def _run(self, pipeline: Pipeline, turn: TurnContext) -> None:
        with _CallScope(turn.run_id, self._hooks):
            await pipeline.run(turn)

    def __repr__(self) -> str:
        memory = type(self._memory).__name__ if self._memory is not None else None
        return f"Agent(model={self._model_name!r}, memory={memory}, guards={self.guard_names})"


def _elapsed_ms(since: datetime) -> float:
    return (utc_now() - since).total_seconds() * 1000.0
