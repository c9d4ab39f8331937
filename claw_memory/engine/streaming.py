"""Streaming: the pipeline runs in a task of its own and hands deltas over one at a time.

The task runs in a copy of the consumer's context with the call's ``run_id`` and hooks set in
it, so nothing is ever set in (or reset from) the consumer's context: the stream may be closed
from any task, or by garbage collection, without a context-variable error.

A delta is handed over only when the consumer asks for it, and the model stage waits until
the consumer comes back for the next one. So when the consumer stops early (``break``,
``aclose()``, cancellation, or dropping the stream), the pipeline is still inside the model
stage: it is cancelled there, the model stream is closed, ``stream.abort`` fires and nothing is
stored. A stream that ran to its end has saved its turn before ``async for`` finishes.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncGenerator, Awaitable
from typing import Any, Final, Self

from claw_memory._closing import AsyncClosing
from claw_memory.engine.conversation import Response, Turn
from claw_memory.engine.stages import Pipeline, TurnContext
from claw_memory.hooks import Hooks, current_hooks, current_run_id

__all__ = ["ResponseStream", "TurnStream"]

_DONE: Final[Any] = object()


class _Handoff:
    """A one-item channel from the pipeline task to the consumer."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()

    async def send(self, delta: str) -> None:
        """Give ``delta`` to the consumer; returns once the consumer asks for the next item."""
        self._queue.put_nowait(delta)
        await self._queue.join()

    def finish(self, outcome: Any) -> None:
        """The last item: :data:`_DONE` or the exception that ended the call."""
        self._queue.put_nowait(outcome)

    async def receive(self) -> Any:
        return await self._queue.get()

    def ack(self) -> None:
        """The consumer is done with the last delta and wants the next one."""
        self._queue.task_done()


async def _produce(pipeline: Pipeline, turn: TurnContext, handoff: _Handoff) -> None:
    try:
        await pipeline.run(turn)
    except Exception as exc:
        handoff.finish(exc)
    except BaseException as exc:  # cancellation: the consumer is gone; re-raised, not reported
        handoff.finish(exc)
        raise
    else:
        handoff.finish(_DONE)


async def _relay(
    pipeline: Pipeline, turn: TurnContext, hooks: Hooks | None
) -> AsyncGenerator[str, None]:
    handoff = _Handoff()
    turn.sink = handoff.send
    context = contextvars.copy_context()
    context.run(current_run_id.set, turn.run_id)
    context.run(current_hooks.set, hooks)
    task = asyncio.get_running_loop().create_task(
        _produce(pipeline, turn, handoff), context=context
    )
    try:
        while True:
            item = await handoff.receive()
            if isinstance(item, str):
                yield item
                handoff.ack()
            elif item is _DONE:
                return
            else:
                raise item
    except GeneratorExit:
        turn.abort = ("the consumer closed the stream before its end", "GeneratorExit")
        raise
    except asyncio.CancelledError:
        turn.abort = ("cancelled", "CancelledError")
        raise
    finally:
        if not task.done():
            task.cancel()
            # Wait, so the model stream is closed and the turn lock released when we return.
            await asyncio.wait((task,))


class ResponseStream(AsyncClosing):
    """The text deltas of :meth:`Agent.stream`, as the model produces them.

    Iterate it once with ``async for``; :attr:`response` is available once it has ended.
    Closing it early (``break`` then :meth:`aclose`, ``async with``, cancelling the consuming
    task, or dropping it) stops the model and stores nothing.
    """

    __slots__ = ("_agen", "_model", "_turn")

    def __init__(
        self, pipeline: Pipeline, turn: TurnContext, hooks: Hooks | None, model: str
    ) -> None:
        self._turn = turn
        self._model = model
        self._agen = _relay(pipeline, turn, hooks)

    def __aiter__(self) -> Self:
        return self

    def __anext__(self) -> Awaitable[str]:  # the generator's own awaitable: no extra frame
        return self._agen.__anext__()

    async def aclose(self) -> None:
        """Stop the stream (if still running) and wait until the model stream is closed."""
        await self._agen.aclose()

    @property
    def finished(self) -> bool:
        """Whether the stream ran to its end (and, in a conversation, saved its turn)."""
        return self._turn.completed

    @property
    def response(self) -> Response:
        """The whole response; raises ``RuntimeError`` until the stream has ended."""
        if not self._turn.completed:
            raise RuntimeError("the stream has not run to its end")
        return self._turn.response(self._model)


class TurnStream(ResponseStream):
    """The deltas of :meth:`Agent.stream_in_conversation`; :attr:`turn` once it has ended."""

    __slots__ = ()

    @property
    def turn(self) -> Turn:
        """The completed turn; raises ``RuntimeError`` until the stream has ended."""
        updated = self._turn.updated
        if not self._turn.completed or updated is None:
            raise RuntimeError("the stream has not run to its end")
        return Turn(self._turn.response(self._model), updated)
