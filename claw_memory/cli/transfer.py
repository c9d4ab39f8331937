"""``export`` and ``import``: move entries between any two drivers as JSON lines.

The format is one JSON object per line, UTF-8, compact::

    {"namespace":"default","key":"city","value":"Lisbon","expires_at":null}
    {"namespace":"default","key":"otp","value":{"code":123456},"expires_at":1767225600.123}

``expires_at`` is an absolute UNIX time in seconds, rounded to the millisecond, or ``null`` for
an entry that never expires. Absolute times survive the trip exactly, however long the file
waits between export and import; an entry whose time has passed by then is skipped. Within a
namespace, lines come oldest stored first, so an import recreates the same order (``all()``
order and search tie-breaks). Importing a line sets its key, so importing a file twice leaves
the same state as once. ``import`` also accepts ``"ttl"`` (seconds from the moment of import,
``null`` or ``0`` for never) in place of ``expires_at``, for files written by hand.

Listing namespaces and expiry times is :class:`~claw_memory.contracts.InspectableMemory`, which
every core driver implements; for any other driver ``export`` needs ``--namespace`` and writes
``expires_at: null`` (and says so). Writing an entry with an absolute expiry is
:class:`RestorableMemory`; a driver without it gets ``set`` with the TTL left at the moment of
each write, which can put its expiry a few milliseconds later than the file's.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, Final

import typer

from claw_memory.cli._common import (
    MemoryOption,
    OperationFailed,
    UsageProblem,
    console,
    memory_url,
    open_memory,
    plural,
    run,
)
from claw_memory.contracts import InspectableMemory, MemoryEntry, RestorableMemory

if TYPE_CHECKING:
    from claw_memory.contracts import Memory

__all__ = [
    "ImportReport",
    "RestorableMemory",
    "export_command",
    "export_records",
    "import_command",
    "import_records",
]

_CHUNK: Final = 1 << 20
#: Entries per :meth:`RestorableMemory.restore` call.
BATCH: Final = 500


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# -- export -----------------------------------------------------------------------------------
async def export_records(
    memory: Memory, namespaces: Sequence[str] = ()
) -> AsyncIterator[dict[str, Any]]:
    """The export records of ``namespaces`` (every namespace when empty), in file order.

    Raises :class:`UsageProblem` when the driver cannot list namespaces and none were given.
    """
    from claw_memory.validation import NamespaceValidator

    for namespace in namespaces:
        NamespaceValidator.validate(namespace)
    if isinstance(memory, InspectableMemory):
        chosen = list(dict.fromkeys(namespaces)) or await memory.namespaces()
        for namespace in chosen:
            for entry in await memory.entries(namespace):
                expires = entry.expires_at
                yield {"namespace": namespace, "key": entry.key, "value": entry.value,
                       "expires_at": None if expires is None else _unix(expires)}
        return
    if not namespaces:
        raise UsageProblem(
            f"{type(memory).__name__} cannot list its namespaces: name them with --namespace"
        )
    for namespace in dict.fromkeys(namespaces):
        for key, value in (await memory.all(namespace)).items():
            yield {"namespace": namespace, "key": key, "value": value, "expires_at": None}


def _unix(moment: datetime) -> float:
    return round(moment.timestamp(), 3)


async def _write(stream: IO[bytes], data: bytes) -> None:
    import anyio.to_thread

    await anyio.to_thread.run_sync(stream.write, data)


async def _export(url: str, namespaces: Sequence[str], stream: IO[bytes]) -> tuple[int, int, str]:
    memory = open_memory(url)
    try:
        count = 0
        seen: set[str] = set()
        buffer: list[str] = []
        size = 0
        async for record in export_records(memory, namespaces):
            line = _dumps(record) + "\n"
            buffer.append(line)
            size += len(line)
            count += 1
            seen.add(record["namespace"])
            if size >= _CHUNK:
                await _write(stream, "".join(buffer).encode())
                buffer, size = [], 0
        if buffer:
            await _write(stream, "".join(buffer).encode())
        exportable = isinstance(memory, InspectableMemory)
        return count, len(seen), "" if exportable else type(memory).__name__
    finally:
        await memory.aclose()


def export_command(
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--namespace", "-n", metavar="NS",
            help="Export this namespace (repeatable). Default: every namespace.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write here instead of stdout.",
                     dir_okay=False, show_default=False),
    ] = None,
    memory: MemoryOption = None,
) -> None:
    """Write entries as JSON lines (namespace, key, value, expires_at), oldest first."""
    url = memory_url(memory)
    namespaces = list(namespace or [])
    if output is None:
        sys.stdout.flush()
        count, spaces, partial = run(_export(url, namespaces, sys.stdout.buffer))
        sys.stdout.buffer.flush()
    else:
        temporary = output.with_name(f".{output.name}.{os.getpid()}.tmp")
        try:
            with temporary.open("wb") as stream:
                count, spaces, partial = run(_export(url, namespaces, stream))
            temporary.replace(output)
        finally:
            temporary.unlink(missing_ok=True)
    where = f" to {output}" if output is not None else ""
    report = console(stderr=True)
    report.print(f"exported {plural(count, 'entry', 'entries')} from "
                 f"{plural(spaces, 'namespace', 'namespaces')}{where}", markup=False)
    if partial:
        report.print(
            f"note: expiry times were not exported ({partial} cannot report them): "
            "every line has expires_at null"
        )


# -- import -----------------------------------------------------------------------------------
@dataclass
class ImportReport:
    """What an import did. ``bad`` holds ``(line number, reason)`` of each rejected line."""

    imported: int = 0
    expired: int = 0
    bad: list[tuple[int, str]] = field(default_factory=list)
    namespaces: set[str] = field(default_factory=set)
    #: Entries with an expiry written through ``set`` with a relative TTL (no ``restore``).
    relative: int = 0
    driver: str = ""


class _BadLine(Exception):
    pass


def _record(text: bytes) -> tuple[str, str, Any, float | None, float | None]:
    """``(namespace, key, value, expires_at, ttl)`` of one line, or :class:`_BadLine`."""
    try:
        record = json.loads(text)
    except UnicodeDecodeError:
        raise _BadLine("not UTF-8") from None
    except ValueError as exc:
        message = getattr(exc, "msg", "invalid JSON")
        raise _BadLine(f"not JSON ({message})") from None
    if not isinstance(record, dict):
        raise _BadLine("not a JSON object")
    for name in ("namespace", "key", "value"):
        if name not in record:
            raise _BadLine(f"missing field {name!r}")
    namespace, key = record["namespace"], record["key"]
    if not isinstance(namespace, str):
        raise _BadLine("namespace is not a string")
    if not isinstance(key, str):
        raise _BadLine("key is not a string")
    if "expires_at" in record and "ttl" in record:
        raise _BadLine("has both expires_at and ttl")
    times = [(name, record.get(name)) for name in ("expires_at", "ttl")]
    for name, moment in times:
        if moment is not None and (
            moment.__class__ is bool or not isinstance(moment, int | float)
            or not math.isfinite(moment) or moment < 0
        ):
            raise _BadLine(f"{name} is not a non-negative number or null")
    ttl = record.get("ttl")
    return namespace, key, record["value"], record.get("expires_at"), ttl


async def _lines(stream: IO[bytes], progress: Callable[[int], None]) -> AsyncIterator[
    tuple[int, bytes]
]:
    """Numbered lines of ``stream``, read a chunk per thread hop; ``progress`` is told the
    bytes of each line once the consumer comes back for the next one (i.e. has handled it)."""
    import anyio.to_thread

    number = 0
    pending = b""
    while True:
        chunk: bytes = await anyio.to_thread.run_sync(stream.read, _CHUNK)
        if not chunk:
            break
        pieces = (pending + chunk).split(b"\n")
        pending = pieces.pop()
        for piece in pieces:
            number += 1
            yield number, piece
            progress(len(piece) + 1)
    if pending:
        yield number + 1, pending
        progress(len(pending))


async def import_records(
    memory: Memory,
    lines: AsyncIterator[tuple[int, bytes]],
    on_progress: Callable[[ImportReport], None] | None = None,
) -> ImportReport:
    """Import numbered JSON lines into ``memory``; bad lines are reported, good ones kept.

    Input errors of one line (bad JSON, a key or namespace or value the contract rejects) are
    recorded in the report; an unreachable backend ends the import with its error. With
    :class:`RestorableMemory` entries are written in batches of :data:`BATCH`.
    """
    from claw_memory.errors import InvalidInputError

    report = ImportReport(driver=type(memory).__name__)
    restore = memory.restore if isinstance(memory, RestorableMemory) else None
    batch: list[tuple[int, MemoryEntry]] = []

    def done(entry: MemoryEntry) -> None:
        report.imported += 1
        report.namespaces.add(entry.namespace)

    async def write_batch() -> None:
        assert restore is not None
        try:
            await restore([entry for _, entry in batch])
        except InvalidInputError:
            for number, entry in batch:  # find the lines the driver refused, one by one
                try:
                    await restore([entry])
                except InvalidInputError as exc:
                    report.bad.append((number, str(exc)))
                else:
                    done(entry)
        else:
            for _, entry in batch:
                done(entry)
        batch.clear()

    async for number, text in lines:
        if not text.strip():
            continue
        try:
            entry = _entry(text)
            if entry is None:
                report.expired += 1
            elif restore is not None:
                batch.append((number, entry))
                if len(batch) >= BATCH:
                    await write_batch()
            else:
                await _set(memory, entry, report)
                done(entry)
        except (_BadLine, InvalidInputError) as exc:
            report.bad.append((number, str(exc)))
        if on_progress is not None and not batch:
            on_progress(report)
    if batch:
        await write_batch()
    report.bad.sort()
    if on_progress is not None:
        on_progress(report)
    return report


def _entry(text: bytes) -> MemoryEntry | None:
    """The entry one line describes; ``None`` when it has expired already."""
    from claw_memory.validation import NamespaceValidator, validate_key, validate_value

    namespace, key, value, expires_at, ttl = _record(text)
    NamespaceValidator.validate(namespace)
    validate_key(key)
    validate_value(value)
    now = time.time()
    if ttl is not None:
        expires_at = None if ttl == 0 else now + ttl
    if expires_at is None:
        return MemoryEntry(key, value, namespace, None, None)
    if expires_at <= now:
        return None
    return MemoryEntry(key, value, namespace, None, datetime.fromtimestamp(expires_at, UTC))


async def _set(memory: Memory, entry: MemoryEntry, report: ImportReport) -> None:
    if entry.expires_at is None:
        await memory.set(entry.key, entry.value, entry.namespace, 0)
        return
    ttl = max(entry.expires_at.timestamp() - time.time(), 0.001)
    await memory.set(entry.key, entry.value, entry.namespace, ttl)
    report.relative += 1


async def _import(url: str, stream: IO[bytes], total: int | None) -> ImportReport:
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    memory = open_memory(url)
    progress = Progress(
        TextColumn("importing"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[entries]:,} entries"),
        TimeElapsedColumn(),
        console=console(stderr=True),
        transient=True,
    )
    task = progress.add_task("import", total=total, entries=0)
    counter = [0]

    def advance(size: int) -> None:
        progress.advance(task, size)

    def seen(report: ImportReport) -> None:
        counter[0] += 1
        if counter[0] % 200 == 0:
            progress.update(task, entries=report.imported)

    try:
        with progress:
            report = await import_records(memory, _lines(stream, advance), seen)
            progress.update(task, entries=report.imported)
        return report
    finally:
        await memory.aclose()


def import_command(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="JSON lines written by export; - reads stdin.")
    ],
    memory: MemoryOption = None,
) -> None:
    """Import JSON lines into a driver. Idempotent; bad lines are reported and skipped."""
    url = memory_url(memory)
    if file == "-":
        report = run(_import(url, sys.stdin.buffer, None))
    else:
        path = Path(file)
        if not path.is_file():
            raise UsageProblem(f"FILE: {file!r} is not a readable file")
        with path.open("rb") as stream:
            report = run(_import(url, stream, path.stat().st_size))
    out = console(stderr=True)
    for number, reason in report.bad[:50]:
        out.print(f"line {number}: {reason}", markup=False)
    if len(report.bad) > 50:
        out.print(f"… and {len(report.bad) - 50} more bad lines")
    summary = (
        f"imported {plural(report.imported, 'entry', 'entries')} into "
        f"{plural(len(report.namespaces), 'namespace', 'namespaces')}; "
        f"{report.expired:,} already expired (skipped); "
        f"{plural(len(report.bad), 'bad line', 'bad lines')}"
    )
    out.print(summary, markup=False)
    if report.relative:
        out.print(f"note: {report.driver} takes relative TTLs, so the expiry of "
                  f"{plural(report.relative, 'entry', 'entries')} may be a few milliseconds "
                  "later than in the file", markup=False)
    if report.bad:
        raise OperationFailed(f"{len(report.bad):,} lines could not be imported (see above)")
