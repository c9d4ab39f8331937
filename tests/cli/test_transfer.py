"""``export`` and ``import``: the JSON-lines format, bad lines, idempotency and round trips."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pexpect  # type: ignore[import-untyped]
import pytest

from claw_memory.cli import main
from claw_memory.cli._common import UsageProblem
from claw_memory.cli.transfer import RestorableMemory, export_records, import_records
from claw_memory.contracts import Memory
from claw_memory.drivers.file import FileMemory
from claw_memory.drivers.sql import SqlMemory
from claw_memory.engine import Claw
from tests.cli._process import TIMEOUT, claw_command
from tests.cli._redis import isolated_redis_memory
from tests.support.factories import PlainMemory
from tests.support.services import postgres_available, require

#: Expiry times survive exactly through a driver with ``restore``; through ``set`` with a
#: relative TTL they land within this many seconds of the file's.
RELATIVE_TTL_SLACK = 0.05


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def run_cli_async(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """:func:`run_cli` from a test that runs in an event loop (the command runs its own)."""
    return await asyncio.to_thread(run_cli, capsys, *args)


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def numbered(lines: list[dict[str, Any]]) -> AsyncIterator[tuple[int, bytes]]:
    for number, record in enumerate(lines, 1):
        yield number, json.dumps(record, ensure_ascii=False).encode()


async def export_all(memory: Memory) -> list[dict[str, Any]]:
    return [record async for record in export_records(memory)]


def assert_same_export(
    expected: list[dict[str, Any]], actual: list[dict[str, Any]], *, exact: bool
) -> None:
    """Same entries, namespaces, order and values; expiry exact or within the slack."""
    assert [(r["namespace"], r["key"]) for r in actual] == [
        (r["namespace"], r["key"]) for r in expected
    ]
    assert [r["value"] for r in actual] == [r["value"] for r in expected]
    for want, got in zip(expected, actual, strict=True):
        if want["expires_at"] is None or exact:
            assert got["expires_at"] == want["expires_at"], (want["key"], got["expires_at"])
        else:
            assert got["expires_at"] is not None
            assert abs(got["expires_at"] - want["expires_at"]) <= RELATIVE_TTL_SLACK


@pytest.fixture
def file_url(tmp_path: Path) -> str:
    return f"file://{tmp_path / 'file-store'}"


def test_export_writes_one_json_object_per_entry_oldest_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, file_url: str
) -> None:
    for args in (["set", "b", "second"], ["set", "a", '{"n": 1}', "--ttl", "600"],
                 ["set", "z", "other", "-n", "user:1"], ["set", "é", "café ☕", "-n", "user_1"]):
        assert run_cli(capsys, *args, "--memory", file_url)[0] == 0
    before = time.time()
    code, out, err = run_cli(capsys, "export", "--memory", file_url)
    assert code == 0
    assert err.strip() == "exported 4 entries from 3 namespaces"
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["namespace"], r["key"], r["value"]) for r in records] == [
        ("default", "b", "second"),
        ("default", "a", {"n": 1}),
        ("user:1", "z", "other"),
        ("user_1", "é", "café ☕"),
    ]
    assert all(list(r) == ["namespace", "key", "value", "expires_at"] for r in records)
    assert records[0]["expires_at"] is None
    assert before + 590 < records[1]["expires_at"] < before + 601
    assert records[1]["expires_at"] == round(records[1]["expires_at"], 3)
    assert "café ☕" in out  # UTF-8, not \\u escapes

    chosen = tmp_path / "chosen.jsonl"
    code, _, err = run_cli(capsys, "export", "-n", "user_1", "-n", "user:1", "-o", str(chosen),
                           "--memory", file_url)
    assert code == 0
    assert f"exported 2 entries from 2 namespaces to {chosen}" in err
    assert [r["namespace"] for r in read_lines(chosen)] == ["user_1", "user:1"]


def test_import_reports_bad_lines_by_number_and_keeps_the_good_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    now = time.time()
    lines = [
        json.dumps({"namespace": "default", "key": "good1", "value": [1, 2], "expires_at": None}),
        "{not json",
        json.dumps({"namespace": "default", "value": 1, "expires_at": None}),
        json.dumps({"namespace": "bad/ns", "key": "k", "value": 1, "expires_at": None}),
        "",
        json.dumps({"namespace": "default", "key": "x" * 300, "value": 1, "expires_at": None}),
        json.dumps({"namespace": "default", "key": "gone", "value": 1, "expires_at": now - 5}),
        json.dumps({"namespace": "default", "key": "neg", "value": 1, "ttl": -3}),
        json.dumps({"namespace": "default", "key": "both", "value": 1, "ttl": 3,
                    "expires_at": now + 50}),
        "[1, 2]",
        json.dumps({"namespace": "notes", "key": "good2", "value": "text", "ttl": 120}),
        json.dumps({"namespace": "notes", "key": "good3", "value": None,
                    "expires_at": now + 3600}),
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    url = f"sqlite+aiosqlite:///{tmp_path / 'target.db'}"
    code, _, err = run_cli(capsys, "import", str(source), "--memory", url)
    assert code == 1
    reported = [line for line in err.splitlines() if line.startswith("line ")]
    assert [line.split(":")[0] for line in reported] == [
        "line 2", "line 3", "line 4", "line 6", "line 8", "line 9", "line 10",
    ]
    assert "line 2: not JSON" in err
    assert "line 3: missing field 'key'" in err
    assert "line 4: namespace must not contain '/'" in err
    assert "line 6: key must be at most 255 characters" in err
    assert "line 8: ttl is not a non-negative number or null" in err
    assert "line 9: has both expires_at and ttl" in err
    assert "line 10: not a JSON object" in err
    assert ("imported 3 entries into 2 namespaces; 1 already expired (skipped); 7 bad lines"
            in err)
    assert err.rstrip().endswith(
        "claw-memory: error: 7 lines could not be imported (see above)"
    )
    code, out, _ = run_cli(capsys, "export", "--memory", url)
    assert code == 0
    kept = [json.loads(line) for line in out.splitlines()]
    assert [(r["namespace"], r["key"], r["value"]) for r in kept] == [
        ("default", "good1", [1, 2]), ("notes", "good2", "text"), ("notes", "good3", None),
    ]
    assert now + 110 < kept[1]["expires_at"] < time.time() + 121


def test_import_is_idempotent_and_reads_stdin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, file_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in ("one", "two", "three"):
        run_cli(capsys, "set", key, f"value {key}", "--ttl", "900", "--memory", file_url)
    dump = tmp_path / "dump.jsonl"
    assert run_cli(capsys, "export", "-o", str(dump), "--memory", file_url)[0] == 0
    target = f"sqlite+aiosqlite:///{tmp_path / 'twice.db'}"
    first = run_cli(capsys, "import", str(dump), "--memory", target)
    assert first[0] == 0
    assert "imported 3 entries into 1 namespace; 0 already expired (skipped); 0 bad lines" in (
        first[2]
    )

    class Stdin:
        buffer = dump.open("rb")

    monkeypatch.setattr("sys.stdin", Stdin)
    second = run_cli(capsys, "import", "-", "--memory", target)
    Stdin.buffer.close()
    assert second[0] == 0
    assert "imported 3 entries" in second[2]
    again = tmp_path / "again.jsonl"
    assert run_cli(capsys, "export", "-o", str(again), "--memory", target)[0] == 0
    target_exact = isinstance(SqlMemory(target.replace("twice", "probe")), RestorableMemory)
    assert_same_export(read_lines(dump), read_lines(again), exact=target_exact)


def test_import_of_a_missing_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run_cli(capsys, "import", str(tmp_path / "nope.jsonl"), "--memory", "array:")
    assert code == 2
    assert "is not a readable file" in err


async def test_export_without_inspection_needs_namespaces_and_has_no_expiry() -> None:
    memory = PlainMemory()
    await memory.set("k", {"v": 1}, "only", ttl=60)
    with pytest.raises(UsageProblem, match="name them with --namespace"):
        await export_all(memory)
    records = [r async for r in export_records(memory, ["only"])]
    assert records == [{"namespace": "only", "key": "k", "value": {"v": 1}, "expires_at": None}]


async def test_import_without_restore_sets_relative_ttls() -> None:
    target = PlainMemory()
    soon = time.time() + 30
    records = [{"namespace": "n", "key": "k", "value": 1, "expires_at": soon},
               {"namespace": "n", "key": "forever", "value": 2, "expires_at": None}]
    report = await import_records(target, numbered(records))
    assert (report.imported, report.relative, report.bad) == (2, 1, [])
    assert await target.all("n") == {"k": 1, "forever": 2}


# -- the 10,000-entry round trip -----------------------------------------------------------------
ENTRIES = 10_000


async def populate(memory: Memory, count: int) -> None:
    """A realistic store: facts, scratch, look-alike namespaces, TTLs, and real conversations."""
    rng = random.Random(20240601)
    words = ["gold", "tier", "customer", "discount", "Lisbon", "café", "émoji 🦀", "order",
             "invoice", "shipping", "refund", "deploy", "staging", "release", "Dana"]
    namespaces = ["default", "scratch", "user:1", "user.1", "user_1"]
    for i in range(count):
        namespace = namespaces[i % len(namespaces)]
        kind = i % 4
        value: Any
        if kind == 0:
            value = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        elif kind == 1:
            value = {"n": i, "tags": [rng.choice(words) for _ in range(3)], "ok": i % 2 == 0}
        elif kind == 2:
            value = [i, i / 7, None, "x" * (i % 50)]
        else:
            value = i if i % 3 else None
        ttl = 0 if i % 3 == 0 else rng.uniform(3600, 86400)
        await memory.set(f"key-{i:05d}:{rng.choice(words)}", value, namespace, ttl)
    agent = Claw.builder().memory(memory).build()
    conversation = await agent.conversation()
    for text in ("My name is Alice.", "What is my name?"):
        conversation = (await agent.send_in_conversation(conversation, text)).conversation


@pytest.fixture
async def redis_target() -> AsyncIterator[Memory]:
    async with isolated_redis_memory() as memory:
        yield memory


async def test_round_trip_file_to_redis_to_sqlite_keeps_10000_entries_with_ttls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, file_url: str, redis_target: Memory
) -> None:
    async with FileMemory(tmp_path / "file-store") as source:
        await populate(source, ENTRIES)

    # FileMemory -> file, through the command.
    from_file = tmp_path / "from-file.jsonl"
    code, _, err = await run_cli_async(capsys, "export", "-o", str(from_file), "--memory", file_url)
    assert code == 0, err
    exported = read_lines(from_file)
    assert len(exported) == ENTRIES + 1
    assert sum(r["expires_at"] is not None for r in exported) > ENTRIES // 2
    assert "conversations" in {r["namespace"] for r in exported}

    # file -> Redis -> file, with the functions the commands run.
    report = await import_records(
        redis_target, numbered(exported)
    )
    assert (report.imported, report.expired, report.bad) == (ENTRIES + 1, 0, [])
    from_redis = await export_all(redis_target)
    redis_exact = isinstance(redis_target, RestorableMemory)
    assert_same_export(exported, from_redis, exact=redis_exact)
    via_redis = tmp_path / "from-redis.jsonl"
    via_redis.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in from_redis), encoding="utf-8"
    )

    # file -> SQLite -> file, through the commands again.
    sqlite_url = f"sqlite+aiosqlite:///{tmp_path / 'round-trip.db'}"
    code, _, err = await run_cli_async(capsys, "import", str(via_redis), "--memory", sqlite_url)
    assert code == 0, err
    assert f"imported {ENTRIES + 1:,} entries into 6 namespaces" in err
    from_sqlite = tmp_path / "from-sqlite.jsonl"
    code, _, err = await run_cli_async(
        capsys, "export", "-o", str(from_sqlite), "--memory", sqlite_url
    )
    assert code == 0, err
    sqlite_exact = isinstance(SqlMemory(sqlite_url), RestorableMemory)
    assert_same_export(exported, read_lines(from_sqlite), exact=redis_exact and sqlite_exact)


async def test_round_trip_keeps_expiry_times_to_the_millisecond(
    tmp_path: Path, redis_target: Memory
) -> None:
    async with FileMemory(tmp_path / "exact") as source:
        await populate(source, 500)
        exported = await export_all(source)
    await import_records(redis_target, numbered(exported))
    from_redis = await export_all(redis_target)
    async with SqlMemory(f"sqlite+aiosqlite:///{tmp_path / 'exact.db'}") as sqlite:
        await import_records(sqlite, numbered(from_redis))
        from_sqlite = await export_all(sqlite)
    assert from_redis == exported
    assert from_sqlite == exported


async def test_round_trip_file_to_postgresql(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from tests.support.drivers_sql import POSTGRES, server_factory

    if not require("postgresql", postgres_available(), None):
        return
    async with FileMemory(tmp_path / "pg-source") as source:
        await populate(source, 1000)
        exported = await export_all(source)
    make = server_factory(POSTGRES, request.config)
    async with make() as postgres:
        report = await import_records(postgres, numbered(exported))
        assert (report.imported, report.bad) == (len(exported), [])
        again = await export_all(postgres)
        assert_same_export(exported, again, exact=isinstance(postgres, RestorableMemory))


def test_ctrl_c_interrupts_an_import_with_exit_code_130(tmp_path: Path) -> None:
    program, prefix = claw_command()
    child = pexpect.spawn(program, [*prefix, "import", "-", "--memory", "array:"],
                          cwd=str(tmp_path), encoding="utf-8", timeout=TIMEOUT,
                          env={**os.environ, "TERM": "xterm", "NO_COLOR": "1"})
    child.expect_exact("importing")  # the progress bar: the import is waiting for lines
    child.sendintr()
    child.expect_exact("claw-memory: error: interrupted")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
