"""``claw-memory chat``: an interactive, streaming chat in the terminal, with memory.

One event loop serves the whole session; the terminal is read between turns, while the loop is
idle, so input never blocks it. During a reply a Ctrl-C cancels the reply (the engine then
stores nothing of that turn); Ctrl-C at the prompt, or a second Ctrl-C while a reply is being
cancelled, ends the session, as do Ctrl-D and ``/exit``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Final
from urllib.parse import urlsplit, urlunsplit

import typer

from claw_memory.cli._common import (
    MemoryOption,
    UsageProblem,
    console,
    describe_memory,
    memory_url,
    open_memory,
    plural,
    redact_url,
    secret,
)

if TYPE_CHECKING:
    from rich.console import Console

    from claw_memory.contracts import Memory
    from claw_memory.engine import Agent, Conversation
    from claw_memory.models import Model

__all__ = ["ModelChoice", "chat_command", "resolve_model"]

OPENAI_DEFAULT_BASE: Final = "https://api.openai.com/v1"
PROMPT: Final = "you> "
REPLY: Final = "claw> "
HELP: Final = """\
/remember KEY TEXT   store TEXT under KEY (namespace default: recalled when relevant)
/forget KEY          remove KEY
/recall QUERY        show what recall would put in front of QUERY
/history             show this conversation
/new                 start a new conversation
/help                this list
/exit                leave (also Ctrl-D, or Ctrl-C at the prompt)
Ctrl-C during a reply cancels it; nothing of that turn is stored. //text sends /text."""


@dataclass(frozen=True)
class ModelChoice:
    """Which model a chat talks to: ``echo``, or an OpenAI-compatible server."""

    name: str
    base_url: str | None = None
    api_key: str | None = None

    def describe(self) -> str:
        if self.base_url is None:
            return "echo (offline: replies with what it received)"
        return f"{self.name} at {redact_url(self.base_url)}"

    def build(self) -> Model:
        from claw_memory.models import EchoModel, OpenAICompatibleModel

        if self.base_url is None:
            return EchoModel()
        return OpenAICompatibleModel(self.base_url, self.name, api_key=self.api_key)


def resolve_model(spec: str | None, environ: Mapping[str, str]) -> ModelChoice:
    """The model ``--model`` (or ``$CLAW_MODEL``) names.

    ``echo`` (the default) is offline. A plain NAME talks to ``$OPENAI_BASE_URL`` (default
    OpenAI's). A URL names server and model at once: ``http://host:11434/v1/llama3.2`` (the
    name is what follows ``/v1/``; else the last path segment). ``$OPENAI_API_KEY`` is sent as
    the bearer token when set.
    """
    spec = (spec or environ.get("CLAW_MODEL") or "echo").strip()
    api_key = environ.get("OPENAI_API_KEY") or None
    secret(api_key)
    if spec.lower() == "echo":
        return ModelChoice("echo")
    if "://" not in spec:
        base = environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE
        if not base.startswith(("http://", "https://")):
            raise UsageProblem("OPENAI_BASE_URL must be an http:// or https:// URL")
        redact_url(base)
        return ModelChoice(spec, base.rstrip("/"), api_key)
    redact_url(spec)
    parts = urlsplit(spec)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise UsageProblem("--model: a model URL must start with http:// or https://")
    path = parts.path.rstrip("/")
    if "/v1/" in path:
        base_path, _, name = path.partition("/v1/")
        base_path += "/v1"
    elif path.endswith("/v1"):
        base_path, name = path, ""  # a base URL alone: the name is missing
    else:
        base_path, _, name = path.rpartition("/")
    name = name.strip("/")
    if not name:
        raise UsageProblem(
            "--model: put the model name after the base URL, "
            "e.g. http://127.0.0.1:11434/v1/llama3.2"
        )
    base = urlunsplit((parts.scheme, parts.netloc, base_path, "", ""))
    return ModelChoice(name, base, api_key)


class _Session:
    """One chat: the agent, the memory it owns, and the conversation in progress."""

    def __init__(
        self, agent: Agent, memory: Memory, model: Model, conversation: Conversation,
        recall: int, out: Console,
    ) -> None:
        self.agent = agent
        self.memory = memory
        self.model = model
        self.conversation = conversation
        self.recall = recall
        self.out = out
        self.exit_requested = False

    # -- output ------------------------------------------------------------------------------
    def info(self, text: str, style: str = "dim") -> None:
        self.out.print(text, style=style, markup=False, soft_wrap=True)

    @staticmethod
    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    # -- one line of input -------------------------------------------------------------------
    async def handle(self, line: str) -> None:
        """Run one input line (a message or a /command), cancellable with Ctrl-C."""
        text = line.strip()
        if not text:
            return
        if text.startswith("/") and not text.startswith("//"):
            await self._interruptible(lambda: self._command(text), "[cancelled]")
        else:
            message = line[1:] if text.startswith("//") else line
            await self._interruptible(
                lambda: self._reply(message),
                "[reply cancelled: nothing of this turn was stored]",
            )

    async def _interruptible(self, action: Callable[[], Awaitable[None]], notice: str) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        presses = 0

        def interrupted() -> None:
            nonlocal presses
            presses += 1
            if presses > 1:
                self.exit_requested = True
            task.cancel()

        try:
            loop.add_signal_handler(signal.SIGINT, interrupted)
            installed = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
            installed = False
        try:
            await action()
        except asyncio.CancelledError:
            if presses == 0:
                raise
            while task.cancelling():
                task.uncancel()
            self.write("\n")
            self.info(notice, "yellow")
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)

    async def _reply(self, text: str) -> None:
        from claw_memory.errors import ClawMemoryError, GuardBlockedError

        stream = self.agent.stream_in_conversation(self.conversation, text)
        started = False
        try:
            async for chunk in stream:
                if not started:
                    self.write(REPLY)
                    started = True
                self.write(chunk)
        except GuardBlockedError as exc:
            self.info(f"[blocked by the {exc.guard} guard: {exc.reason}; nothing stored]", "red")
            return
        except ClawMemoryError as exc:
            if started:
                self.write("\n")
            self.info(f"[{type(exc).__name__}: {exc}; nothing stored]", "red")
            return
        finally:
            await stream.aclose()
        if not started:
            self.write(REPLY)
        self.write("\n")
        self.conversation = stream.turn.conversation

    # -- /commands ---------------------------------------------------------------------------
    async def _command(self, text: str) -> None:
        from claw_memory.errors import ClawMemoryError

        name, _, rest = text.partition(" ")
        rest = rest.strip()
        handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "/remember": self._remember,
            "/forget": self._forget,
            "/recall": self._recall,
            "/history": self._history,
            "/new": self._new,
            "/help": self._help,
            "/exit": self._exit,
            "/quit": self._exit,
        }
        handler = handlers.get(name.lower())
        if handler is None:
            self.info(f"unknown command {name}; /help lists the commands", "yellow")
            return
        try:
            await handler(rest)
        except ClawMemoryError as exc:
            self.info(f"[{type(exc).__name__}: {exc}]", "red")

    async def _remember(self, rest: str) -> None:
        key, _, value = rest.partition(" ")
        if not key or not value.strip():
            self.info("usage: /remember KEY TEXT", "yellow")
            return
        await self.memory.set(key, value.strip())
        self.info(f"remembered {key!r}")

    async def _forget(self, rest: str) -> None:
        if not rest:
            self.info("usage: /forget KEY", "yellow")
            return
        if not await self.memory.has(rest):
            self.info(f"nothing stored under {rest!r}")
            return
        await self.memory.forget(rest)
        self.info(f"forgot {rest!r}")

    async def _recall(self, rest: str) -> None:
        from claw_memory.contracts import MemoryHit, SearchableMemory
        from claw_memory.engine.recall import NAMESPACE, render_block
        from claw_memory.scoring import TokenOverlapScorer

        if not rest:
            self.info("usage: /recall QUERY", "yellow")
            return
        if self.recall == 0:
            self.info("recall is off (--recall 0)")
            return
        # The same lookup the recall stage makes, so this shows what a message would carry.
        hits: list[MemoryHit]
        if isinstance(self.memory, SearchableMemory):
            hits = await self.memory.search(rest, self.recall, NAMESPACE)
        else:
            entries = await self.memory.all(NAMESPACE)
            hits = TokenOverlapScorer.rank(entries, rest, self.recall, NAMESPACE)
        block, keys, size = render_block((hit.key, hit.value) for hit in hits[: self.recall])
        if not keys:
            self.info("nothing would be recalled for that message")
            return
        self.info(f"recall would inject {plural(len(keys), 'entry', 'entries')} ({size} bytes):")
        self.write(block)

    async def _history(self, rest: str) -> None:
        history = self.conversation.history
        if not history:
            self.info(f"conversation {self.conversation.id} has no turns yet")
            return
        turns = plural(self.conversation.turn_count, "turn", "turns")
        self.info(f"conversation {self.conversation.id}, {turns}:")
        for message in history:
            label = {"user": "you", "assistant": "claw"}.get(message.role, message.role)
            self.write(f"{label}: {message.content}\n")

    async def _new(self, rest: str) -> None:
        self.conversation = await self.agent.conversation()
        self.info(f"new conversation {self.conversation.id}")

    async def _help(self, rest: str) -> None:
        self.write(HELP + "\n")

    async def _exit(self, rest: str) -> None:
        self.exit_requested = True

    async def aclose(self) -> None:
        try:
            closer = getattr(self.model, "aclose", None)
            if closer is not None:
                await closer()
        finally:
            await self.memory.aclose()


async def _open(
    url: str, choice: ModelChoice, conversation_id: str | None, recall: int, out: Console
) -> _Session:
    from claw_memory.engine import Claw

    memory = open_memory(url)
    try:
        model = choice.build()
        agent = Claw.builder().model(model).memory(memory).long_term_memory(recall).build()
        conversation = await agent.conversation(id=conversation_id)
    except BaseException:
        await memory.aclose()
        raise
    return _Session(agent, memory, model, conversation, recall, out)


def _read_line() -> str:
    return input(PROMPT)


def chat_command(
    memory: MemoryOption = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", metavar="URL/NAME", envvar="CLAW_MODEL", show_envvar=True,
            help="echo (offline), a model NAME on $OPENAI_BASE_URL, or BASE_URL/NAME such as "
            "http://127.0.0.1:11434/v1/llama3.2. $OPENAI_API_KEY is sent when set. Default: echo.",
            show_default=False,
        ),
    ] = None,
    conversation: Annotated[
        str | None,
        typer.Option("--conversation", "-c", metavar="ID",
                     help="Resume this conversation (its id is shown when a chat starts)."),
    ] = None,
    recall: Annotated[
        int, typer.Option("--recall", min=0, metavar="N",
                          help="Memory entries recalled per message; 0 turns recall off.")
    ] = 3,
) -> None:
    """Chat in the terminal with memory: replies stream, facts are recalled, turns are kept."""
    url = memory_url(memory)
    choice = resolve_model(model, os.environ)
    out = console()
    if sys.stdin.isatty():
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401 - line editing and history for input()
    with asyncio.Runner() as runner:
        session = runner.run(_open(url, choice, conversation, recall, out))
        try:
            _banner(session, url, choice, conversation)
            while not session.exit_requested:
                try:
                    line = _read_line()
                except EOFError:
                    session.write("\n")
                    break
                except KeyboardInterrupt:
                    session.write("\n")
                    break
                try:
                    runner.run(session.handle(line))
                except KeyboardInterrupt:  # a Ctrl-C that arrived between two handlers
                    session.write("\n")
                    session.info("[interrupted]", "yellow")
        finally:
            runner.run(session.aclose())


def _banner(session: _Session, url: str, choice: ModelChoice, requested: str | None) -> None:
    conversation = session.conversation
    session.info(
        f"claw-memory chat · memory: {describe_memory(url)} · model: {choice.describe()}",
        "bold",
    )
    if requested is not None and conversation.id != requested:
        state = f"new: no conversation {requested!r} in this memory"
    elif conversation.history:
        state = f"resumed, {plural(conversation.turn_count, 'turn', 'turns')}"
    else:
        state = "new"
    session.info(f"conversation {conversation.id} ({state})", "bold")
    session.info("/help lists commands · Ctrl-C cancels a reply · Ctrl-D quits")
