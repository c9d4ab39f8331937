"""What every command shares: opening a memory from a URL, running a coroutine, output, errors.

Errors end a command as one line on stderr and an exit code: 1 when the operation failed, 2 when
the command line was wrong. Nothing printed ever carries a password from a URL or an API key:
every secret a command sees is registered with :func:`secret` and masked in error text.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from claw_memory.contracts import Memory

__all__ = [
    "DEFAULT_MEMORY_URL",
    "MemoryOption",
    "NamespaceOption",
    "OperationFailed",
    "UsageProblem",
    "console",
    "describe_memory",
    "memory_url",
    "open_memory",
    "plural",
    "print_error",
    "redact_url",
    "run",
    "scrub",
    "secret",
    "with_memory",
]

T = TypeVar("T")

MemoryOption = Annotated[
    str | None,
    typer.Option(
        "--memory",
        "-m",
        envvar="CLAW_MEMORY_URL",
        show_envvar=True,
        metavar="URL",
        help="Driver URL: file:///path, redis://…, rediss://…, sqlite+aiosqlite:///…, "
        "postgresql+asyncpg://…, array:. Default: file:storage/phpclaw/memory.",
        show_default=False,
    ),
]
NamespaceOption = Annotated[
    str, typer.Option("--namespace", "-n", metavar="NS", help="The namespace.")
]


#: What ``--memory`` means when neither it nor ``CLAW_MEMORY_URL`` is given: FileMemory's own
#: default directory, relative to the working directory.
DEFAULT_MEMORY_URL: Final = "file:storage/phpclaw/memory"
MEMORY_ENV: Final = "CLAW_MEMORY_URL"
_SECRET_QUERY_WORDS: Final = ("pass", "secret", "token", "key", "auth")


class UsageProblem(Exception):
    """The command line asked for something impossible (exit code 2)."""


class OperationFailed(Exception):
    """The command ran but could not do its job (exit code 1)."""


@dataclass
class _State:
    debug: bool = False
    secrets: set[str] = field(default_factory=set)


STATE = _State()


def secret(value: str | None) -> None:
    """Remember ``value`` so that :func:`scrub` masks it in anything printed."""
    if value and len(value) >= 3:
        STATE.secrets.add(value)


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    for value in sorted(STATE.secrets, key=len, reverse=True):
        text = text.replace(value, "***")
    return text


def redact_url(url: str) -> str:
    """``url`` without its password (and without secret-looking query values)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, _, password = userinfo.partition(":")
        secret(password)
        netloc = f"{user}:***@{host}" if password else f"{user}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        masked = []
        for name, value in pairs:
            if any(word in name.lower() for word in _SECRET_QUERY_WORDS):
                secret(value)
                value = "***"
            masked.append((name, value))
        query = urlencode(masked, safe="*/:")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def console(stderr: bool = False) -> Console:
    """A Rich console on stdout (or stderr), made per call so redirected streams are honoured."""
    from rich.console import Console

    # Messages on stderr are never wrapped (a path or URL stays whole); tables on stdout fit.
    return Console(stderr=stderr, highlight=False, soft_wrap=stderr)


def plural(count: int, one: str, many: str) -> str:
    """``"1 entry"``, ``"10,000 entries"``."""
    return f"{count:,} {one if count == 1 else many}"


def memory_url(option: str | None) -> str:
    """The driver URL to use: ``--memory``, else ``$CLAW_MEMORY_URL``, else the default."""
    return option or os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY_URL


def open_memory(url: str) -> Memory:
    """Build the driver ``url`` names through :meth:`MemoryRegistry.from_url`."""
    from claw_memory.errors import RegistryError
    from claw_memory.registry import MemoryRegistry

    redact_url(url)  # registers the password, if any, before anything can print it
    try:
        return MemoryRegistry.from_url(url)
    except RegistryError as exc:
        raise UsageProblem(f"--memory: {scrub(str(exc))}") from exc
    except ImportError as exc:
        extra = "redis" if url.lower().startswith(("redis", "rediss", "unix")) else "sql"
        raise OperationFailed(
            f"the driver for this URL needs the {extra!r} extra: "
            f"pip install 'claw-memory[{extra}]'"
        ) from exc


def describe_memory(url: str) -> str:
    """How a banner names the memory: the URL without secrets, file paths made absolute."""
    parts = urlsplit(url)
    if parts.scheme.lower() == "file":
        from pathlib import Path
        from urllib.parse import unquote

        raw = unquote(parts.netloc + parts.path) if parts.netloc else unquote(parts.path)
        return Path(raw or ".").resolve().as_uri()
    return redact_url(url)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on a fresh event loop (a command's whole async part)."""
    return asyncio.run(coroutine)


async def with_memory(url: str | None, action: Callable[[Memory], Awaitable[T]]) -> T:
    """Open the memory ``url`` names, run ``action`` on it, and close it whatever happens."""
    memory = open_memory(memory_url(url))
    try:
        return await action(memory)
    finally:
        await memory.aclose()


def print_error(message: str) -> None:
    """One line on stderr, secrets masked."""
    sys.stderr.write(f"claw-memory: error: {scrub(message)}\n")
    sys.stderr.flush()
