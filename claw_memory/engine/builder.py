"""``Claw.builder()``: configure an :class:`~claw_memory.engine.Agent` step by step.

::

    agent = (Claw.builder()
             .model(OpenAICompatibleModel("http://localhost:11434/v1", "llama3"))
             .memory(FileMemory())
             .long_term_memory(3)        # entries recalled per message; 0 = off
             .store_messages(True)       # False wraps the memory in PrivacyAwareMemory
             .guards(MyGuard())          # added to the default set
             .without_guard("pii")       # drop a default by name
             .build())

Arguments are checked when given, except guard-name conflicts, which ``build()`` reports. A
builder can build several agents; each gets fresh default guards.
"""

from __future__ import annotations

from typing import Self

from claw_memory.contracts import Memory
from claw_memory.engine.agent import Agent
from claw_memory.guards import Guard, GuardSet, default_guards
from claw_memory.hooks import Hooks
from claw_memory.models import EchoModel, Model
from claw_memory.wrappers.privacy import PrivacyAwareMemory

__all__ = ["Claw", "ClawBuilder"]


class ClawBuilder:
    """Collects an agent's settings; :meth:`build` makes the agent."""

    __slots__ = (
        "_default_guards",
        "_guards",
        "_hooks",
        "_memory",
        "_model",
        "_recall",
        "_store_messages",
        "_system_prompt",
        "_without",
    )

    def __init__(self) -> None:
        self._model: Model | None = None
        self._memory: Memory | None = None
        self._recall = 3
        self._store_messages = True
        self._guards: list[Guard] = []
        self._default_guards = True
        self._without: list[str] = []
        self._hooks: Hooks | None = None
        self._system_prompt: str | None = None

    def model(self, model: Model) -> Self:
        """The chat model (default: ``EchoModel()``, offline)."""
        if not isinstance(model, Model):
            raise TypeError(
                f"{type(model).__name__} is not a model: it needs name, complete() and stream()"
            )
        self._model = model
        return self

    def memory(self, memory: Memory | None) -> Self:
        """The memory for recall and conversations (default: none, so neither happens)."""
        if memory is not None and not isinstance(memory, Memory):
            raise TypeError(f"memory must be a Memory, not {type(memory).__name__}")
        self._memory = memory
        return self

    def long_term_memory(self, entries: int) -> Self:
        """How many entries recall prepends per message (default 3; 0 = off; negative = 0)."""
        if isinstance(entries, bool) or not isinstance(entries, int):
            raise TypeError(f"entries must be an int, not {type(entries).__name__}")
        self._recall = max(entries, 0)
        return self

    def store_messages(self, store: bool = True) -> Self:
        """Whether conversations are stored (default ``True``).

        ``False`` wraps the memory in :class:`PrivacyAwareMemory`: every ``set`` is dropped,
        reads still pass through, and ``agent.memory`` is the wrapper.
        """
        self._store_messages = bool(store)
        return self

    def guards(self, *guards: Guard) -> Self:
        """Add guards to the set (on top of the defaults unless they are turned off)."""
        for guard in guards:
            if not isinstance(guard, Guard):
                raise TypeError(
                    f"{type(guard).__name__} is not a guard: it needs name, priority, sees and "
                    "scan()"
                )
        self._guards.extend(guards)
        return self

    def default_guards(self, enabled: bool = True) -> Self:
        """Whether the default guards run (default ``True``)."""
        self._default_guards = bool(enabled)
        return self

    def without_guard(self, name: str) -> Self:
        """Drop the default guard called ``name`` (``build()`` rejects an unknown name)."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        self._without.append(name)
        return self

    def hooks(self, hooks: Hooks | None) -> Self:
        """Fire the agent's events (and the memory events its calls cause) on ``hooks``."""
        if hooks is not None and not isinstance(hooks, Hooks):
            raise TypeError(f"hooks must be a Hooks, not {type(hooks).__name__}")
        self._hooks = hooks
        return self

    def system_prompt(self, text: str | None) -> Self:
        """A system message sent first on every call; never stored in conversations."""
        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a str or None, not {type(text).__name__}")
        self._system_prompt = text
        return self

    def build(self) -> Agent:
        """A new agent with these settings."""
        defaults = default_guards()
        known = [guard.name for guard in defaults]
        guard_set = GuardSet(defaults if self._default_guards else ())
        for name in self._without:
            if name not in known:
                raise ValueError(f"without_guard({name!r}): the default guards are {known}")
            if name in guard_set:
                guard_set.remove(name)
        for guard in self._guards:
            guard_set.add(guard)
        memory = self._memory
        if memory is not None and not self._store_messages:
            memory = PrivacyAwareMemory(memory, store_messages=False)
        return Agent(
            model=self._model if self._model is not None else EchoModel(),
            memory=memory,
            long_term_memory=self._recall,
            guards=guard_set,
            hooks=self._hooks,
            system_prompt=self._system_prompt,
        )


class Claw:
    """The entry point: ``Claw.builder()``."""

    __slots__ = ()

    @staticmethod
    def builder() -> ClawBuilder:
        """A fresh builder with the defaults."""
        return ClawBuilder()
