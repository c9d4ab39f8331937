"""The engine's pipeline: stages of one shape over one turn context, assembled once per agent.

Every stage has one method, ``async def run(turn)``, that reads and fills a :class:`TurnContext`.
:func:`assemble` writes the order down once, for ``send`` and ``stream`` alike::

    recall -> guard scan -> [load history] -> model call -> [persistence]

The bracketed stages run for conversation calls only. A stage stops the call by raising; later
stages then never run, so a guarded or failed call reaches no model and stores nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from time import perf_counter
from typing import Any, Protocol

from claw_memory import hooks as _hooks
from claw_memory.contracts import Memory
from claw_memory.engine.conversation import (
    Conversation,
    ConversationStore,
    Message,
    Response,
    utc_now,
)
from claw_memory.engine.recall import RecallStage
from claw_memory.errors import ClawMemoryError, ModelError
from claw_memory.guards import GuardSet
from claw_memory.hooks import Hooks
from claw_memory.models import ChatMessage, Model

__all__ = [
    "GuardStage",
    "LoadHistoryStage",
    "ModelStage",
    "PersistStage",
    "Pipeline",
    "Stage",
    "TurnContext",
    "assemble",
    "describe_error",
]


class TurnContext:
    """What one call knows as it moves through the stages."""

    __slots__ = (
        "abort",
        "augmented",
        "base",
        "completed",
        "conversation",
        "message",
        "recalled",
        "received_at",
        "release",
        "reply",
        "run_id",
        "sink",
        "updated",
    )

    def __init__(self, message: str, run_id: str, conversation: Conversation | None = None) -> None:
        #: The user's text as typed.
        self.message = message
        self.run_id = run_id
        #: The conversation the caller passed (conversation calls only).
        self.conversation = conversation
        #: The message with the recall block in front; what the guards and the model see.
        self.augmented = message
        #: Keys of the memory entries in the recall block.
        self.recalled: tuple[str, ...] = ()
        #: The conversation the turn extends: the latest stored state, or the one passed.
        self.base: Conversation | None = None
        self.received_at: datetime | None = None
        #: The model's full reply.
        self.reply = ""
        #: The conversation including this turn, once saved.
        self.updated: Conversation | None = None
        #: Streaming calls: receives each delta, returns once the consumer asks for more.
        self.sink: Callable[[str], Awaitable[None]] | None = None
        #: ``(error, error_class)`` when the stream relay stopped the call from outside.
        self.abort: tuple[str, str] | None = None
        #: Releases what a stage holds until the call ends (a conversation's turn lock).
        self.release: Callable[[], None] | None = None
        #: Every stage succeeded.
        self.completed = False

    def response(self, model: str) -> Response:
        """The call's :class:`Response`."""
        return Response(self.reply, model, self.run_id, self.recalled)


class Stage(Protocol):
    """One step of the pipeline."""

    async def run(self, turn: TurnContext) -> None:
        """Read and fill ``turn``; raise to stop the call."""


def describe_error(exc: BaseException, turn: TurnContext | None = None) -> tuple[str, str]:
    """``(error, error_class)`` for an event payload.

    Errors of claw_memory promise messages without stored values, so theirs are used; any
    other exception is described by its class name only. A cancellation the stream relay
    caused is described as the relay recorded it in ``turn.abort``.
    """
    name = type(exc).__name__
    if isinstance(exc, ClawMemoryError):
        return str(exc), name
    if isinstance(exc, asyncio.CancelledError):
        if turn is not None and turn.abort is not None:
            return turn.abort
        return "cancelled", name
    return name, name


class GuardStage:
    """Runs the guards; the first block raises :class:`~claw_memory.errors.GuardBlockedError`."""

    __slots__ = ("_guards", "_hooks")

    def __init__(self, guards: GuardSet, hooks: Hooks | None) -> None:
        self._guards = guards
        self._hooks = hooks

    async def run(self, turn: TurnContext) -> None:
        block = await self._guards.check(turn.message, turn.augmented)
        if block is None:
            return
        if _hooks.active():
            await _hooks.emit(
                "guard.blocked",
                {"message": turn.message, "reason": block.reason, "guard": block.guard},
                self._hooks,
            )
        raise block.error()


class LoadHistoryStage:
    """Conversation calls: takes the conversation's turn lock and reads its latest state.

    The lock is held until the call ends, so concurrent turns on one conversation run one
    after the other and each sees the ones before (see :meth:`ConversationStore.latest` for
    which state a turn extends).
    """

    __slots__ = ("_store",)

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def run(self, turn: TurnContext) -> None:
        passed = turn.conversation
        assert passed is not None
        turn.received_at = utc_now()
        if self._store.memory is None:
            turn.base = passed
            return
        turn.release = await self._store.lock(passed.id)
        turn.base = await self._store.latest(passed)


class ModelStage:
    """Calls the model with the history and the augmented message.

    ``send`` uses ``complete``; a streaming call uses ``stream``, hands each delta to the
    turn's sink, and always closes the model stream. Failures of the model that are not
    claw_memory errors are raised as :class:`ModelError` (chained).
    """

    __slots__ = ("_hooks", "_model", "_name", "_system")

    def __init__(self, model: Model, system_prompt: str | None, hooks: Hooks | None) -> None:
        self._model = model
        self._name = str(model.name)
        self._system: tuple[ChatMessage, ...] = (
            ({"role": "system", "content": system_prompt},) if system_prompt else ()
        )
        self._hooks = hooks

    @property
    def model_name(self) -> str:
        return self._name

    def _messages(self, turn: TurnContext) -> list[ChatMessage]:
        messages = list(self._system)
        if turn.base is not None:
            for message in turn.base.history:
                messages.append({"role": message.role, "content": message.content})
        messages.append({"role": "user", "content": turn.augmented})
        return messages

    def _failed(self, exc: BaseException) -> ModelError:
        return ModelError(f"model {self._name!r} failed: {type(exc).__name__}")

    async def run(self, turn: TurnContext) -> None:
        messages = self._messages(turn)
        if turn.sink is not None:
            await self._stream(turn, messages, turn.sink)
            return
        try:
            reply = await self._model.complete(messages)
        except ClawMemoryError:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc
        if not isinstance(reply, str):
            raise ModelError(f"model {self._name!r} returned {type(reply).__name__}, not text")
        turn.reply = reply

    async def _stream(
        self, turn: TurnContext, messages: list[ChatMessage], sink: Callable[[str], Awaitable[None]]
    ) -> None:
        if _hooks.active():
            await _hooks.emit("stream.start", {"model": self._name}, self._hooks)
        started = perf_counter()
        parts: list[str] = []
        try:
            stream = self._model.stream(messages)
            try:
                async for delta in stream:
                    if not isinstance(delta, str):
                        raise ModelError(
                            f"model {self._name!r} streamed {type(delta).__name__}, not text"
                        )
                    if delta:
                        parts.append(delta)
                        await sink(delta)
            finally:
                close: Any = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
        except BaseException as exc:
            translated = isinstance(exc, Exception) and not isinstance(exc, ClawMemoryError)
            failure = self._failed(exc) if translated else exc
            if _hooks.active():
                await _hooks.emit(
                    "stream.abort",
                    {"model": self._name, "error": describe_error(failure, turn)[0]},
                    self._hooks,
                )
            if failure is exc:
                raise
            raise failure from exc
        turn.reply = "".join(parts)
        if _hooks.active():
            await _hooks.emit(
                "stream.end",
                {"model": self._name, "chars": len(turn.reply),
                 "duration_ms": (perf_counter() - started) * 1000.0},
                self._hooks,
            )


class PersistStage:
    """Conversation calls: stores the user's raw text and the reply, after the model succeeded."""

    __slots__ = ("_store",)

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def run(self, turn: TurnContext) -> None:
        base = turn.base
        assert base is not None
        assert turn.received_at is not None
        updated = base.appended(
            Message("user", turn.message, created_at=turn.received_at),
            Message("assistant", turn.reply),
        )
        await self._store.save(updated)
        turn.updated = updated


class Pipeline:
    """Stages run in order, framed by the ``agent.before``, ``agent.after``, ``agent.error`` events.

    Every call fires ``agent.before`` and then exactly one of ``agent.after`` (success) or
    ``agent.error`` (any exception, including a cancellation or a stream its consumer closed).
    """

    __slots__ = ("_hooks", "_model_name", "stages")

    def __init__(self, stages: Iterable[Stage], model_name: str, hooks: Hooks | None) -> None:
        self.stages: tuple[Stage, ...] = tuple(stages)
        self._model_name = model_name
        self._hooks = hooks

    async def run(self, turn: TurnContext) -> None:
        started = perf_counter()
        if _hooks.active():
            await _hooks.emit("agent.before", {"message": turn.message}, self._hooks)
        try:
            try:
                for stage in self.stages:
                    await stage.run(turn)
            finally:
                release, turn.release = turn.release, None
                if release is not None:
                    release()
        except BaseException as exc:
            if _hooks.active():
                error, error_class = describe_error(exc, turn)
                await _hooks.emit(
                    "agent.error",
                    {"message": turn.message, "error": error, "error_class": error_class},
                    self._hooks,
                )
            raise
        turn.completed = True
        if _hooks.active():
            await _hooks.emit(
                "agent.after",
                {"message": turn.message, "text": turn.reply, "model": self._model_name,
                 "duration_ms": (perf_counter() - started) * 1000.0},
                self._hooks,
            )


def assemble(
    *,
    model: Model,
    memory: Memory | None,
    recall_limit: int,
    guards: GuardSet,
    hooks: Hooks | None,
    system_prompt: str | None,
    store: ConversationStore,
) -> tuple[Pipeline, Pipeline]:
    """Build an agent's two pipelines once: ``(plain calls, conversation calls)``."""
    load, persist = LoadHistoryStage(store), PersistStage(store)
    model_stage = ModelStage(model, system_prompt, hooks)
    # The one place the order is written, for send and stream alike.
    order: tuple[Stage | None, ...] = (
        RecallStage(memory, recall_limit, hooks) if memory is not None and recall_limit else None,
        GuardStage(guards, hooks) if len(guards) else None,
        load,  # conversation calls: take the turn lock, read the latest history
        model_stage,
        persist,  # conversation calls: store the raw text and the reply
    )
    conversational = [stage for stage in order if stage is not None]
    plain = [stage for stage in conversational if stage is not load and stage is not persist]
    name = model_stage.model_name
    return Pipeline(plain, name, hooks), Pipeline(conversational, name, hooks)
