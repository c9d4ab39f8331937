"""Events: subscribe handlers to what the memory layer and the engine do.

``claw_memory.hooks.on(name, handler)`` subscribes ``handler(payload)`` (a plain function or an
``async def``) on the process-wide default :class:`Hooks`. An ``Agent`` or driver given its own
``Hooks`` fires there instead. Inside an engine call the agent's hooks and ``run_id`` travel in
context variables, so memory events caused by the call carry the same ``run_id`` and go to the
agent's hooks.

A handler that raises is logged and skipped; it never breaks the operation. Payloads never
carry stored values or recalled text (``guard.blocked`` carries the user's own message).

Emitting costs one attribute check while no handler is subscribed anywhere, so drivers call
:func:`active` before building a payload.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, ClassVar, TypeAlias, overload

__all__ = [
    "Handler",
    "Hooks",
    "active",
    "current_hooks",
    "current_run_id",
    "default_hooks",
    "emit",
    "off",
    "on",
]

logger = logging.getLogger("claw_memory.hooks")

Handler: TypeAlias = Callable[[dict[str, Any]], Awaitable[None] | None]

#: The id of the engine call in progress, added to every payload emitted inside it.
current_run_id: ContextVar[str | None] = ContextVar("claw_memory_run_id", default=None)
#: The hooks of the engine call in progress; drivers without hooks of their own fire there.
current_hooks: ContextVar[Hooks | None] = ContextVar("claw_memory_hooks", default=None)


class Hooks:
    """A registry of event handlers, by event name."""

    # Handlers subscribed on any Hooks in the process; zero means every emit can be skipped.
    _subscribed: ClassVar[int] = 0

    __slots__ = ("_handlers",)

    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = {}

    @overload
    def on(self, name: str, handler: Handler) -> Handler: ...

    @overload
    def on(self, name: str, handler: None = None) -> Callable[[Handler], Handler]: ...

    def on(
        self, name: str, handler: Handler | None = None
    ) -> Handler | Callable[[Handler], Handler]:
        """Subscribe ``handler`` to event ``name`` and return it.

        Without ``handler`` it returns a decorator: ``@hooks.on("memory.write")``.
        """
        if handler is None:
            return lambda func: self.on(name, func)
        if not callable(handler):
            raise TypeError("handler must be callable")
        self._handlers.setdefault(name, []).append(handler)
        Hooks._subscribed += 1
        return handler

    def off(self, name: str, handler: Handler | None = None) -> None:
        """Unsubscribe ``handler`` from ``name``, or every handler of ``name`` when omitted."""
        handlers = self._handlers.get(name)
        if not handlers:
            return
        if handler is None:
            Hooks._subscribed -= len(handlers)
            del self._handlers[name]
            return
        try:
            handlers.remove(handler)
        except ValueError:
            return
        Hooks._subscribed -= 1
        if not handlers:
            del self._handlers[name]

    def clear(self) -> None:
        """Unsubscribe every handler."""
        for name in list(self._handlers):
            self.off(name)

    def has_handlers(self, name: str) -> bool:
        """Whether any handler listens to ``name``."""
        return name in self._handlers

    async def emit(self, name: str, payload: dict[str, Any]) -> None:
        """Call every handler of ``name`` with ``payload`` plus ``event`` (and ``run_id``)."""
        handlers = self._handlers.get(name)
        if not handlers:
            return
        payload["event"] = name
        run_id = current_run_id.get()
        if run_id is not None:
            payload.setdefault("run_id", run_id)
        for handler in tuple(handlers):
            try:
                result = handler(payload)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:  # a faulty handler must never break the operation
                logger.error(
                    "event handler %r for %s raised %s; skipped",
                    getattr(handler, "__qualname__", handler),
                    name,
                    type(exc).__name__,
                )


default_hooks = Hooks()


def active() -> bool:
    """Whether any handler is subscribed anywhere (the cheap check before building a payload)."""
    return Hooks._subscribed > 0


def resolve(own: Hooks | None) -> Hooks:
    """The hooks an emitter should fire on: its own, else the engine call's, else the default."""
    if own is not None:
        return own
    return current_hooks.get() or default_hooks


async def emit(name: str, payload: dict[str, Any], hooks: Hooks | None = None) -> None:
    """Fire ``name`` on ``hooks`` (resolved as :func:`resolve` does)."""
    if Hooks._subscribed:
        await resolve(hooks).emit(name, payload)


@overload
def on(name: str, handler: Handler) -> Handler: ...


@overload
def on(name: str, handler: None = None) -> Callable[[Handler], Handler]: ...


def on(name: str, handler: Handler | None = None) -> Handler | Callable[[Handler], Handler]:
    """Subscribe ``handler`` to ``name`` on the process-wide default hooks (or decorate)."""
    return default_hooks.on(name, handler)


def off(name: str, handler: Handler | None = None) -> None:
    """Unsubscribe from the process-wide default hooks."""
    default_hooks.off(name, handler)
