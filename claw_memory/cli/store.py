"""The store commands: ``get``, ``set``, ``forget``, ``flush``, ``ls`` and ``search``.

Each opens the driver its ``--memory`` URL names, does one thing and closes it.
"""

from __future__ import annotations

import json
import math
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from claw_memory.cli._common import (
    MemoryOption,
    NamespaceOption,
    OperationFailed,
    UsageProblem,
    console,
    plural,
    run,
    with_memory,
)

if TYPE_CHECKING:
    from claw_memory.contracts import Memory

__all__ = [
    "flush_command",
    "forget_command",
    "get_command",
    "ls_command",
    "search_command",
    "set_command",
]

def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def get_command(
    key: Annotated[str, typer.Argument(help="The key to read.")],
    namespace: NamespaceOption = "default",
    raw: Annotated[
        bool, typer.Option("--raw", "-r", help="Print a text value as is, not as JSON.")
    ] = False,
    memory: MemoryOption = None,
) -> None:
    """Print the value stored under KEY, as JSON. Exits 1 when there is none."""

    async def action(store: Memory) -> tuple[bool, Any]:
        if not await store.has(key, namespace):
            return False, None
        return True, await store.get(key, namespace)

    found, value = run(with_memory(memory, action))
    if not found:
        raise OperationFailed(f"no entry {key!r} in namespace {namespace!r}")
    text = value if raw and isinstance(value, str) else _dumps(value)
    sys.stdout.write(text + "\n")


def _parse_value(value: str, as_json: bool, as_text: bool) -> Any:
    if as_json and as_text:
        raise UsageProblem("--json and --text exclude each other")
    if as_text:
        return value
    try:
        return json.loads(value)
    except ValueError:
        if as_json:
            raise UsageProblem(
                "VALUE is not valid JSON (drop --json to store it as text)"
            ) from None
        return value


def set_command(
    key: Annotated[str, typer.Argument(help="The key to write.")],
    value: Annotated[
        str,
        typer.Argument(
            help="JSON (42, true, [1,2], {\"a\":1}, \"text\"), else stored as text; - reads stdin."
        ),
    ],
    namespace: NamespaceOption = "default",
    ttl: Annotated[
        float | None,
        typer.Option(
            "--ttl",
            min=0,
            metavar="SECONDS",
            help="Expire after this many seconds; 0 never expires. "
            "Default: the driver's default TTL.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="VALUE must be JSON.")] = False,
    as_text: Annotated[
        bool, typer.Option("--text", help="Store VALUE as text even if it parses as JSON.")
    ] = False,
    memory: MemoryOption = None,
) -> None:
    """Store VALUE under KEY (replacing what was there)."""
    text = sys.stdin.read().removesuffix("\n") if value == "-" else value
    parsed = _parse_value(text, as_json, as_text)
    if ttl is not None and not math.isfinite(ttl):
        raise UsageProblem("--ttl must be a finite number of seconds")

    async def action(store: Memory) -> None:
        await store.set(key, parsed, namespace, ttl)

    run(with_memory(memory, action))


def forget_command(
    key: Annotated[str, typer.Argument(help="The key to remove.")],
    namespace: NamespaceOption = "default",
    memory: MemoryOption = None,
) -> None:
    """Remove KEY (an absent key is not an error)."""

    async def action(store: Memory) -> None:
        await store.forget(key, namespace)

    run(with_memory(memory, action))


def flush_command(
    namespace: NamespaceOption = "default",
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    memory: MemoryOption = None,
) -> None:
    """Remove every entry of one namespace (asks first unless --yes)."""
    if not yes:
        typer.confirm(f"Remove every entry of namespace {namespace!r}?", abort=True)

    async def action(store: Memory) -> None:
        await store.flush(namespace)

    run(with_memory(memory, action))
    console(stderr=True).print(f"flushed namespace {namespace!r}")


def _size(value: Any) -> int:
    return len(_dumps(value).encode())


def _human_bytes(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def _expiry(expires_at: float | None, now: float) -> str:
    if expires_at is None:
        return "never"
    left = max(expires_at - now, 0.0)
    moment = datetime.fromtimestamp(expires_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if left < 120:
        span = f"{left:.0f}s"
    elif left < 7200:
        span = f"{left / 60:.0f}m"
    elif left < 172800:
        span = f"{left / 3600:.0f}h"
    else:
        span = f"{left / 86400:.0f}d"
    return f"in {span} ({moment})"


def ls_command(
    namespace: NamespaceOption = "default",
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per line instead of a table.")
    ] = False,
    memory: MemoryOption = None,
) -> None:
    """List the keys of a namespace with their sizes and expiry, oldest stored first."""

    from claw_memory.contracts import InspectableMemory

    async def action(store: Memory) -> tuple[list[tuple[str, Any, float | None]], bool]:
        if isinstance(store, InspectableMemory):
            rows = [
                (e.key, e.value, None if e.expires_at is None else e.expires_at.timestamp())
                for e in await store.entries(namespace)
            ]
            return rows, True
        return [(k, v, None) for k, v in (await store.all(namespace)).items()], False

    rows, knows_expiry = run(with_memory(memory, action))
    now = time.time()
    if as_json:
        for key, value, expires_at in rows:
            sys.stdout.write(
                _dumps({"key": key, "bytes": _size(value),
                        "expires_at": expires_at if knows_expiry else "unknown"}) + "\n"
            )
        return
    from rich.table import Table

    title = f"namespace {namespace!r}: {plural(len(rows), 'entry', 'entries')}"
    table = Table(title=title, title_justify="left")
    table.add_column("key", overflow="fold")
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("expires", no_wrap=True)
    for key, value, expires_at in rows:
        table.add_row(
            key,
            _human_bytes(_size(value)),
            _expiry(expires_at, now) if knows_expiry else "unknown",
        )
    console().print(table)


def _preview(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else _dumps(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def search_command(
    query: Annotated[str, typer.Argument(help="Words to look for.")],
    namespace: NamespaceOption = "default",
    limit: Annotated[int, typer.Option("--limit", "-l", min=1, help="At most this many hits.")] = 5,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per line instead of a table.")
    ] = False,
    memory: MemoryOption = None,
) -> None:
    """Rank the entries of a namespace against QUERY (the scoring recall uses)."""
    from claw_memory.contracts import MemoryHit, SearchableMemory
    from claw_memory.scoring import TokenOverlapScorer

    async def action(store: Memory) -> list[MemoryHit]:
        if isinstance(store, SearchableMemory):
            return await store.search(query, limit, namespace)
        return TokenOverlapScorer.rank(await store.all(namespace), query, limit, namespace)

    hits = run(with_memory(memory, action))
    if as_json:
        for hit in hits:
            stored = hit.stored_at.isoformat() if hit.stored_at else None
            sys.stdout.write(
                _dumps({"key": hit.key, "score": hit.score, "value": hit.value,
                        "stored_at": stored}) + "\n"
            )
        return
    from rich.table import Table

    title = f"{plural(len(hits), 'hit', 'hits')} in namespace {namespace!r}"
    table = Table(title=title, title_justify="left")
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    table.add_column("stored", no_wrap=True)
    for hit in hits:
        stored = hit.stored_at.strftime("%Y-%m-%d %H:%M:%S") if hit.stored_at else ""
        table.add_row(f"{hit.score:g}", hit.key, _preview(hit.value), stored)
    console().print(table)
