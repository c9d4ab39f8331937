"""FileMemory beyond the conformance suite: layout, cache validation, recovery, update().

A second instance on the same directory stands in for another process: it has its own cache
and its own lock file descriptors, exactly as another process would.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import random
import string
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claw_memory import hooks
from claw_memory.contracts import MemoryEntry
from claw_memory.drivers import _filestore
from claw_memory.drivers import file as file_module
from claw_memory.drivers._filestore import decode_namespace, encode_namespace
from claw_memory.drivers.file import FileMemory
from claw_memory.errors import CorruptStoreError, DriverUnavailableError, InvalidValueError
from claw_memory.registry import MemoryRegistry
from claw_memory.scoring import TokenOverlapScorer


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def journal(directory: Path, namespace: str = "default") -> Path:
    return directory / f"{encode_namespace(namespace)}.journal.jsonl"


def snapshot(directory: Path, namespace: str = "default") -> Path:
    return directory / f"{encode_namespace(namespace)}.snapshot.jsonl"


def json_lines(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.decode("utf-8").split("\n")[:-1]]


def contents(directory: Path) -> dict[str, bytes]:
    """Every file of the directory by name (an empty dict when it does not exist)."""
    if not directory.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


async def wait_until(predicate: Callable[[], Any], deadline: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while not await predicate():
        assert loop.time() < end, "condition not met in time"
        await asyncio.sleep(0.01)


# -- file names ------------------------------------------------------------------------------
NAMESPACE_CHARS = string.ascii_letters + string.digits + "_-.:"
namespaces = st.text(alphabet=NAMESPACE_CHARS, min_size=1, max_size=100).filter(
    lambda ns: ".." not in ns
)


@given(namespaces)
def test_file_names_are_reversible_and_use_only_portable_lower_case(namespace: str) -> None:
    stem = encode_namespace(namespace)
    assert decode_namespace(stem) == namespace
    assert set(stem) <= set(string.ascii_lowercase + string.digits + "._-")
    assert stem.startswith("ns-")
    assert len(stem) <= 3 + 2 * 100


@given(namespaces, namespaces)
def test_distinct_namespaces_never_share_a_file_even_ignoring_case(a: str, b: str) -> None:
    if a != b:
        assert encode_namespace(a).casefold() != encode_namespace(b).casefold()


@pytest.mark.parametrize("stem", ["user", "ns-A", "ns-a_", "ns-_1", "ns-a_.b", "ns-", "ns-a..b"])
def test_file_names_that_are_not_an_encoding_are_ignored(stem: str) -> None:
    assert decode_namespace(stem) is None


async def test_similar_namespaces_get_one_journal_each(store: Path) -> None:
    names = ["user:1", "user.1", "user_1", "User:1", "USER_1", "user-1", "con", "nul"]
    async with FileMemory(store) as memory:
        for name in names:
            await memory.set("k", name, name)
        assert await memory.namespaces() == sorted(names)
    journals = sorted(name for name in contents(store) if name.endswith(".journal.jsonl"))
    assert len({name.casefold() for name in journals}) == len(names)
    for name in names:
        assert json_lines(journal(store, name))[0]["namespace"] == name


# -- construction ----------------------------------------------------------------------------
async def test_default_directory_is_storage_phpclaw_memory_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    expected = tmp_path / "storage" / "phpclaw" / "memory"
    async with FileMemory() as memory:
        assert Path(memory.storage_dir) == expected
        assert await memory.get("k") is None
        assert not expected.exists()  # reads create nothing
        await memory.set("k", "v")
    assert journal(expected).exists()


async def test_registry_builds_a_file_memory_on_the_given_directory(store: Path) -> None:
    memory = MemoryRegistry.build("file", storage_dir=store)
    assert isinstance(memory, FileMemory)
    async with memory:
        await memory.set("k", [1, 2])
    async with FileMemory(store) as again:
        assert await again.get("k") == [1, 2]


def test_bad_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="durability"):
        FileMemory(durability="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compact_min_bytes"):
        FileMemory(compact_min_bytes=-1)


@pytest.mark.parametrize(("durability", "per_set"), [("process", 0), ("fsync", 1)])
async def test_fsync_mode_syncs_every_write_and_the_default_only_new_files(
    store: Path, monkeypatch: pytest.MonkeyPatch, durability: Any, per_set: int
) -> None:
    synced: list[int] = []
    real = _filestore._fsync

    def counting(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(_filestore, "_fsync", counting)
    async with FileMemory(store, durability=durability) as memory:
        await memory.set("first", 1)  # creates the journal: synced in both modes
        created = len(synced)
        for i in range(10):
            await memory.set(f"k{i}", i)
        await memory.forget("k0")
    assert created == 1 + per_set
    assert len(synced) - created == 11 * per_set


# -- cache validation -----------------------------------------------------------------------
async def test_entries_persist_across_instances_oldest_first_with_their_expiry(
    store: Path,
) -> None:
    async with FileMemory(store) as memory:
        await memory.set("c", "C")
        await memory.set("a", {"nested": ["A"]}, ttl=3600)
        await memory.set("b", None)
        await memory.set("c", "C again")
    async with FileMemory(store) as memory:
        assert list((await memory.all()).items()) == [
            ("a", {"nested": ["A"]}), ("b", None), ("c", "C again"),
        ]
        entries = await memory.entries()
        assert entries[0].expires_at is not None
        assert entries[1].expires_at is None


async def test_a_write_by_another_process_is_seen_by_the_next_read(store: Path) -> None:
    reader = FileMemory(store)
    writer = FileMemory(store, compact_min_bytes=0)  # compacts on every write
    await reader.set("k", "old words")
    assert await reader.get("k") == "old words"
    await writer.set("k", "new words")  # also compacts: a new journal and snapshot
    assert await reader.get("k") == "new words"
    await writer.set("other", "more words")
    assert await reader.has("other")
    assert [h.key for h in await reader.search("words")] == ["other", "k"]
    await writer.forget("k")
    assert await reader.all() == {"other": "more words"}
    await writer.flush()
    assert await reader.all() == {}
    assert await reader.search("words") == []


async def test_reads_of_an_unchanged_namespace_make_no_thread_hop(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = file_module._run_sync

    async def counting(fn: Callable[..., Any], *args: Any) -> Any:
        calls.append(fn.__name__)
        return await real(fn, *args)

    monkeypatch.setattr(file_module, "_run_sync", counting)
    memory, other = FileMemory(store), FileMemory(store)
    await memory.set("k", "some words")
    assert calls == ["put"]
    for _ in range(3):
        assert await memory.get("k") == "some words"
        assert await memory.has("k")
        assert await memory.all() == {"k": "some words"}
        assert len(await memory.search("words")) == 1
    assert calls == ["put"]
    await other.set("k", "changed")
    calls.clear()
    assert await memory.get("k") == "changed"
    assert await memory.get("k") == "changed"
    assert calls == ["refresh"]


async def test_reading_a_namespace_never_written_creates_no_files(store: Path) -> None:
    async with FileMemory(store) as memory:
        await memory.set("k", "v")
        assert await memory.all("nothing") == {}
        await memory.forget("k", "nothing")
        await memory.flush("nothing")
        assert await memory.search("anything here", 5, "nothing") == []
    assert sorted(contents(store)) == ["ns-default.journal.jsonl", "ns-default.lock"]


# -- write cost and compaction ---------------------------------------------------------------
async def test_a_set_appends_one_line_and_leaves_the_snapshot_alone(store: Path) -> None:
    async with FileMemory(store, compact_min_bytes=0) as memory:
        for i in range(200):
            await memory.set(f"k{i}", f"value {i}")
    async with FileMemory(store) as memory:
        before = snapshot(store).stat()
        size = journal(store).stat().st_size
        await memory.set("k7", "a new value")
        after = snapshot(store).stat()
        assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
            before.st_ino, before.st_mtime_ns, before.st_size)
        last = journal(store).read_bytes()[size:]
        assert last.count(b"\n") == 1
        record = json.loads(last)
        assert (record["op"], record["k"], record["v"], record["x"]) == (
            "set", "k7", "a new value", None)


async def test_compaction_keeps_the_journal_bounded_by_the_snapshot(store: Path) -> None:
    async with FileMemory(store, compact_min_bytes=1024) as memory:
        for i in range(2000):
            await memory.set(f"k{i % 10}", f"value {i}")
            if i % 250 == 0:
                live = snapshot(store).stat().st_size if snapshot(store).exists() else 0
                assert journal(store).stat().st_size <= max(1024, live) + 200
        assert await memory.all() == {f"k{i % 10}": f"value {i}" for i in range(1990, 2000)}
    lines = json_lines(snapshot(store))
    assert lines[0]["count"] == len(lines) - 1 <= 10
    assert json_lines(journal(store))[0]["gen"] == lines[0]["gen"]


async def test_expired_entries_vanish_at_once_and_are_dropped_at_compaction(
    store: Path,
) -> None:
    async with FileMemory(store) as memory:
        await memory.set("short", "brief words", ttl=0.05)
        await memory.set("long", "lasting words")

        async def gone() -> bool:
            return not await memory.has("short")

        await wait_until(gone)
        assert await memory.all() == {"long": "lasting words"}
    assert any(line.get("k") == "short" for line in json_lines(journal(store)))
    async with FileMemory(store, compact_min_bytes=0) as memory:
        await memory.set("later", 1)  # compacts
    on_disk = json_lines(snapshot(store))[1:] + json_lines(journal(store))[1:]
    assert sorted(line["k"] for line in on_disk) == ["later", "long"]


async def test_flush_leaves_an_empty_snapshot_and_no_other_namespace_touched(
    store: Path,
) -> None:
    async with FileMemory(store) as memory:
        for i in range(50):
            await memory.set(f"k{i}", i)
        await memory.set("k", "kept", "default:sub")
        await memory.flush()
        assert await memory.all() == {}
    assert json_lines(snapshot(store)) == [json_lines(snapshot(store))[0]]
    assert json_lines(snapshot(store))[0]["count"] == 0
    assert len(json_lines(journal(store))) == 1
    async with FileMemory(store) as memory:
        assert await memory.all() == {}
        assert await memory.all("default:sub") == {"k": "kept"}


# -- recovery ---------------------------------------------------------------------------------
async def _three_entries(store: Path) -> None:
    async with FileMemory(store) as memory:
        for key in ("a", "b", "c"):
            await memory.set(key, f"value {key}")


@pytest.mark.parametrize(
    "tail",
    [b'{"op":"set","k":"torn","v":"cut sh', b"\x00\x00\x00\x00", b'{"op":"set"\x00\x00\n'],
    ids=["cut-record", "zero-fill", "unparsable-final-line"],
)
async def test_a_torn_final_record_is_ignored_and_cut_before_the_next_append(
    store: Path, tail: bytes
) -> None:
    await _three_entries(store)
    with journal(store).open("ab") as f:
        f.write(tail)
    async with FileMemory(store) as memory:
        assert await memory.all() == {k: f"value {k}" for k in "abc"}
        await memory.set("d", "value d")
    records = json_lines(journal(store))[1:]
    assert [r["k"] for r in records] == ["a", "b", "c", "d"]
    async with FileMemory(store) as memory:
        assert list(await memory.all()) == ["a", "b", "c", "d"]


async def test_a_reader_caching_the_store_skips_a_torn_tail_and_sees_the_repair(
    store: Path,
) -> None:
    await _three_entries(store)
    async with FileMemory(store) as reader, FileMemory(store) as writer:
        assert len(await reader.all()) == 3
        with journal(store).open("ab") as f:
            f.write(b'{"op":"set","k":"x"')  # a writer died mid-record
        assert len(await reader.all()) == 3
        await writer.set("d", "value d")
        assert list(await reader.all()) == ["a", "b", "c", "d"]


BROKEN = "user:1"


def _garble_middle_of_journal(store: Path) -> None:
    lines = journal(store, BROKEN).read_bytes().split(b"\n")
    # The record of "c", which "d" follows. (Whether "b" is in the journal too depends on the
    # length of its timestamps: a fixed line number could be the last, i.e. a torn tail.)
    middle = next(i for i, line in enumerate(lines) if b'"k":"c"' in line)
    lines[middle] = b'{"op":"set","k":"b","v":'
    journal(store, BROKEN).write_bytes(b"\n".join(lines))


def _append_to_journal(data: bytes) -> Callable[[Path], None]:
    def damage(store: Path) -> None:
        with journal(store, BROKEN).open("ab") as f:
            f.write(data)

    return damage


def _edit_snapshot(edit: Callable[[list[bytes]], None]) -> Callable[[Path], None]:
    def damage(store: Path) -> None:
        lines = snapshot(store, BROKEN).read_bytes().split(b"\n")
        edit(lines)
        snapshot(store, BROKEN).write_bytes(b"\n".join(lines))

    return damage


def _replace_header(field: str, value: Any) -> Callable[[list[bytes]], None]:
    def edit(lines: list[bytes]) -> None:
        header = json.loads(lines[0])
        header[field] = value
        lines[0] = json.dumps(header).encode()

    return edit


DAMAGE: dict[str, Callable[[Path], None]] = {
    "journal-middle-line": _garble_middle_of_journal,
    "journal-unknown-op": _append_to_journal(b'{"op":"rename","k":"a"}\n'),
    "snapshot-truncated": _edit_snapshot(lambda lines: lines.__setitem__(-1, b'{"k":')),
    "snapshot-bad-line": _edit_snapshot(lambda lines: lines.__setitem__(1, b"not json")),
    "snapshot-count": _edit_snapshot(lambda lines: lines.remove(lines[1])),
    "snapshot-namespace": _edit_snapshot(_replace_header("namespace", "elsewhere")),
    "snapshot-version": _edit_snapshot(_replace_header("version", 99)),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
async def test_a_corrupt_namespace_raises_naming_it_and_is_never_overwritten(
    store: Path, damage: str
) -> None:
    async with FileMemory(store, compact_min_bytes=0) as memory:
        await memory.set("a", "value a", "user:1")  # compacted: a snapshot exists
        await memory.set("b", "value b", "user:1")
    async with FileMemory(store, compact_min_bytes=1 << 20) as memory:
        await memory.set("c", "value c", "user:1")
        await memory.set("d", "value d", "user:1")
        await memory.set("k", "fine", "other")
    DAMAGE[damage](store)
    before = contents(store)
    async with FileMemory(store) as memory:
        calls: list[Callable[[], Any]] = [
            lambda: memory.get("a", "user:1"),
            lambda: memory.set("a", "new", "user:1"),
            lambda: memory.forget("a", "user:1"),
            lambda: memory.flush("user:1"),
            lambda: memory.all("user:1"),
            lambda: memory.search("value", 5, "user:1"),
            lambda: memory.update("n", lambda v: 1, "user:1"),
        ]
        for call in calls:
            with pytest.raises(CorruptStoreError, match="'user:1'") as caught:
                await call()
            assert caught.value.namespace == "user:1"
        assert await memory.get("k", "other") == "fine"
    assert contents(store) == before


async def test_a_crash_between_snapshot_and_journal_rename_recovers_from_the_snapshot(
    store: Path,
) -> None:
    async with FileMemory(store, compact_min_bytes=1 << 20) as memory:
        await memory.set("a", 1)
        await memory.set("b", 2)
    old_journal = journal(store).read_bytes()
    async with FileMemory(store, compact_min_bytes=0) as memory:
        await memory.set("c", 3)  # compacts: the snapshot holds a, b, c
    # The state a crash after the snapshot's rename leaves: new snapshot, old journal,
    # and half-written temp files.
    journal(store).write_bytes(old_journal)
    (store / (journal(store).name + ".tmp")).write_bytes(b'{"format":"claw')
    (store / (snapshot(store).name + ".tmp")).write_bytes(b"\x00" * 100)
    async with FileMemory(store) as memory:
        assert await memory.all() == {"a": 1, "b": 2, "c": 3}
        await memory.set("d", 4)
    assert not [name for name in contents(store) if name.endswith(".tmp")]
    async with FileMemory(store) as memory:
        assert await memory.all() == {"a": 1, "b": 2, "c": 3, "d": 4}


async def test_a_journal_symlinked_outside_storage_dir_is_refused(
    store: Path, tmp_path: Path
) -> None:
    await _three_entries(store)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(journal(store).read_bytes())
    journal(store).unlink()
    journal(store).symlink_to(outside)
    async with FileMemory(store) as memory:
        with pytest.raises(CorruptStoreError, match="symlink"):
            await memory.get("a")
        with pytest.raises(CorruptStoreError, match="symlink"):
            await memory.set("a", "overwrite")
    assert outside.read_bytes().count(b"\n") == 4


async def test_a_symlink_that_stays_inside_storage_dir_is_followed(store: Path) -> None:
    await _three_entries(store)
    inner = store / "kept" / "journal.jsonl"
    inner.parent.mkdir()
    journal(store).rename(inner)
    journal(store).symlink_to(inner)
    async with FileMemory(store) as memory:
        assert await memory.all() == {k: f"value {k}" for k in "abc"}


# -- update() ----------------------------------------------------------------------------------
async def test_update_is_an_exact_counter_across_coroutines_and_instances(store: Path) -> None:
    a, b = FileMemory(store), FileMemory(store)

    def increment(n: int | None) -> int:
        return (n or 0) + 1

    await asyncio.gather(*(m.update("hits", increment) for m in [a, b] * 60))
    assert await a.get("hits") == 120
    assert await b.get("hits") == 120


def test_a_driver_keeps_working_under_a_new_event_loop(store: Path) -> None:
    memory = FileMemory(store)

    async def contend() -> None:
        await asyncio.gather(*(memory.update("n", lambda n: (n or 0) + 1) for _ in range(10)))

    asyncio.run(contend())
    asyncio.run(contend())
    assert asyncio.run(memory.get("n")) == 20


async def test_update_passes_none_then_the_current_value_and_applies_the_ttl(
    store: Path,
) -> None:
    seen: list[Any] = []

    def append(current: Any) -> Any:
        seen.append(current)
        return [*(current or []), len(seen)]

    async with FileMemory(store) as memory:
        assert await memory.update("log", append, "ns") == [1]
        assert await memory.update("log", append, "ns", ttl=3600) == [1, 2]
        assert seen == [None, [1]]
        (entry,) = await memory.entries("ns")
        assert entry.value == [1, 2]
        assert entry.expires_at is not None


async def test_update_that_raises_or_returns_non_json_writes_nothing(store: Path) -> None:
    class Boom(Exception):
        pass

    def fail(current: Any) -> Any:
        raise Boom

    async with FileMemory(store) as memory:
        await memory.set("k", "kept")
        with pytest.raises(Boom):
            await memory.update("k", fail)
        with pytest.raises(InvalidValueError):
            await memory.update("k", lambda current: {1, 2})
        assert await memory.get("k") == "kept"
    assert len(json_lines(journal(store))) == 2


async def test_update_refuses_a_coroutine_function(store: Path) -> None:
    async def increment(current: Any) -> Any:
        return (current or 0) + 1

    async with FileMemory(store) as memory:
        with pytest.raises(TypeError, match="plain function"):
            await memory.update("k", increment)
        assert await memory.has("k") is False


async def test_update_fires_a_write_event_without_the_value(store: Path) -> None:
    seen: list[dict[str, Any]] = []
    hooks.on("memory.write", seen.append)
    async with FileMemory(store) as memory:
        await memory.update("k", lambda current: "secret text", "ns", ttl=30)
    assert [(e["key"], e["namespace"], e["driver"], e["ttl"]) for e in seen] == [
        ("k", "ns", "file", 30)]
    assert "secret" not in repr(seen)


# -- search, values, errors ------------------------------------------------------------------
async def test_search_through_the_index_matches_the_scorer_across_writers(store: Path) -> None:
    rng = random.Random(7)
    words = ["gold", "tier", "customer", "discount", "french", "language", "café", "don't",
             "ab", "lisbon", "city"]
    a, b = FileMemory(store, compact_min_bytes=2048), FileMemory(store)
    for step in range(300):
        memory = a if rng.random() < 0.5 else b
        key = f"k{rng.randrange(40)}"
        if rng.random() < 0.15:
            await memory.forget(key)
        else:
            await memory.set(key, " ".join(rng.choices(words, k=rng.randint(1, 6))))
        if step % 25 == 0:
            for query in ("gold customer", "café lisbon city", "don't tier french", "ab"):
                for reader in (a, b):
                    got = [(h.key, h.value, h.score) for h in await reader.search(query, 7)]
                    expected = TokenOverlapScorer.rank(await reader.all(), query, 7)
                    assert got == [(h.key, h.value, h.score) for h in expected]


async def test_search_sees_a_value_changed_by_another_process_after_its_compaction(
    store: Path,
) -> None:
    reader, writer = FileMemory(store), FileMemory(store, compact_min_bytes=0)
    await reader.set("flag", 1)
    await reader.set("other", "true story")
    assert [h.key for h in await reader.search("true")] == ["other"]
    await writer.set("flag", True)  # equal to 1 in Python, but its text is "true"
    await writer.set("other", "true story")  # compacts: the reader reloads everything
    assert [h.key for h in await reader.search("true")] == ["other", "flag"]


async def test_values_round_trip_exactly_and_every_file_is_utf8_json_lines(store: Path) -> None:
    values: list[Any] = ["lone \ud800 surrogate", "line\nbreak \u2028 sep", 2**70, -0.0,
                         1e-300, {"é": ["\x00", None, True]}, (1, (2,))]
    async with FileMemory(store, compact_min_bytes=0) as memory:  # through the snapshot too
        for i, value in enumerate(values):
            await memory.set(f"key\n{i}", value, "ns")
    async with FileMemory(store) as memory:
        got = await memory.all("ns")
    assert list(got.values())[:6] == values[:6]
    assert got["key\n6"] == [1, [2]]
    assert str(list(got.values())[3]) == "-0.0"
    files = contents(store)
    assert len(files) == 3
    for name, data in files.items():
        if name.endswith(".jsonl"):
            assert data.endswith(b"\n")
            lines = data.decode("utf-8").split("\n")[:-1]  # not splitlines: U+2028 is data
            assert all(isinstance(json.loads(line), dict) for line in lines)


async def test_os_errors_become_driver_unavailable_without_the_value(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    async with FileMemory(blocker) as memory:
        with pytest.raises(DriverUnavailableError) as caught:
            await memory.set("k", "secret value")
        with pytest.raises(DriverUnavailableError):
            await memory.update("k", lambda current: 1)
    assert "secret" not in str(caught.value)
    assert "file memory could not set" in str(caught.value)
    assert isinstance(caught.value.__cause__, OSError)


async def test_namespaces_lists_only_namespaces_with_live_entries(store: Path) -> None:
    async with FileMemory(store) as memory:
        await memory.set("k", 1, "b")
        await memory.set("k", 1, "a:1")
        await memory.set("k", 1, "emptied")
        await memory.forget("k", "emptied")
    (store / "unrelated.journal.jsonl").write_text("{}\n")
    async with FileMemory(store) as memory:
        assert await memory.namespaces() == ["a:1", "b"]
    assert "unrelated.journal.jsonl" in contents(store)


# -- restore ---------------------------------------------------------------------------------
def hours_ahead(hours: float) -> datetime:
    """A moment ``hours`` from now with a non-zero microsecond part."""
    moment = datetime.now(UTC) + timedelta(hours=hours)
    return moment.replace(microsecond=moment.microsecond | 1)


async def test_restore_over_two_namespaces_keeps_order_and_makes_restored_keys_newest(
    store: Path,
) -> None:
    async with FileMemory(store) as memory:
        for key in ("a", "b", "c"):
            await memory.set(key, f"old {key}", "left")
        await memory.set("x", "old x", "right")
        await memory.restore([
            MemoryEntry("b", "new b", "left", None, None),
            MemoryEntry("y", {"new": "y"}, "right", None, None),
            MemoryEntry("d", "new d", "left", None, hours_ahead(1)),
            MemoryEntry("x", ["new x"], "right", None, None),
            MemoryEntry("a", "newest a", "left", None, None),
        ])
        expected_left = [("c", "old c"), ("b", "new b"), ("d", "new d"), ("a", "newest a")]
        expected_right = [("y", {"new": "y"}), ("x", ["new x"])]
        assert list((await memory.all("left")).items()) == expected_left
        assert list((await memory.all("right")).items()) == expected_right
    async with FileMemory(store) as other:  # the journals replay to the same order
        assert list((await other.all("left")).items()) == expected_left
        assert list((await other.all("right")).items()) == expected_right


async def test_restore_stores_the_given_expiry_exactly(store: Path) -> None:
    moment = hours_ahead(1)
    async with FileMemory(store) as memory:
        await memory.restore([MemoryEntry("k", "v", "default", None, moment)])
        assert [e.expires_at for e in await memory.entries()] == [moment]
    record = json_lines(journal(store))[-1]
    assert (record["k"], record["x"]) == ("k", moment.timestamp())
    async with FileMemory(store, compact_min_bytes=0) as memory:
        assert [e.expires_at for e in await memory.entries()] == [moment]
        await memory.set("other", 1)  # compacts: the snapshot keeps it too
    assert {r.get("k"): r.get("x") for r in json_lines(snapshot(store))}["k"] == (
        moment.timestamp())


async def test_restore_with_none_never_expires_even_with_a_default_ttl(store: Path) -> None:
    async with FileMemory(store, default_ttl=60) as memory:
        await memory.restore([MemoryEntry("forever", "f", "default", None, None)])
        await memory.set("defaulted", "d")
        entries = {e.key: e.expires_at for e in await memory.entries()}
    assert entries["forever"] is None
    assert entries["defaulted"] is not None  # the default does apply to set


@pytest.mark.parametrize(("durability", "per_namespace"), [("process", 1), ("fsync", 2)])
async def test_a_restore_of_1000_entries_is_one_thread_hop_and_one_lock_per_namespace(
    store: Path, monkeypatch: pytest.MonkeyPatch, durability: Any, per_namespace: int
) -> None:
    hops: list[str] = []
    locks: list[int] = []
    synced: list[int] = []
    real_run, real_flock, real_fsync = file_module._run_sync, fcntl.flock, _filestore._fsync

    async def counting_run(fn: Callable[..., Any], *args: Any) -> Any:
        hops.append(fn.__name__)
        return await real_run(fn, *args)

    def counting_flock(fd: int, operation: int) -> None:
        locks.append(operation)
        real_flock(fd, operation)

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(file_module, "_run_sync", counting_run)
    monkeypatch.setattr(fcntl, "flock", counting_flock)
    monkeypatch.setattr(_filestore, "_fsync", counting_fsync)
    batch = [
        MemoryEntry(f"k{i:04d}", {"n": i, "text": f"word{i} shared"}, f"ns{i % 2}", None,
                    None if i % 3 else hours_ahead(1))
        for i in range(1000)
    ]
    async with FileMemory(store, durability=durability, compact_min_bytes=1 << 30) as memory:
        await memory.restore(batch)
        assert hops == ["restore"]
        assert locks == [fcntl.LOCK_EX] * 2
        # Both journals are new (synced when created in either mode); fsync mode adds one
        # sync of each namespace's appended records.
        assert len(synced) == 2 * per_namespace
        lines = {ns: json_lines(journal(store, ns))[1:] for ns in ("ns0", "ns1")}
        assert [r["k"] for r in lines["ns0"]] == [f"k{i:04d}" for i in range(0, 1000, 2)]
        assert len(lines["ns1"]) == 500
        assert await memory.all("ns0") == {e.key: e.value for e in batch[::2]}
        assert hops == ["restore"]  # reads of what it wrote come from the cache


async def test_restored_entries_are_searchable_here_and_in_another_process(store: Path) -> None:
    async with FileMemory(store) as memory, FileMemory(store) as other:
        await memory.set("set", "gold tier customer")
        assert [h.key for h in await other.search("gold")] == ["set"]
        await memory.restore([
            MemoryEntry("restored", "gold customer in Lisbon", "default", None, None),
            MemoryEntry("set", "silver now", "default", None, None),
        ])
        for reader in (memory, other):
            assert [(h.key, h.score) for h in await reader.search("gold customer")] == [
                ("restored", 2.0)]
            assert [h.key for h in await reader.search("silver")] == ["set"]


async def test_restore_skips_an_entry_that_expires_before_the_lock_is_held(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    soon = datetime.now(UTC) + timedelta(seconds=30)
    real_time = _filestore._time
    monkeypatch.setattr(_filestore, "_time", lambda: real_time() + 60)  # the write is late
    async with FileMemory(store) as memory:
        await memory.set("k", "kept")
        await memory.restore([
            MemoryEntry("k", "expired on the way", "default", None, soon),
            MemoryEntry("n", "never", "default", None, None),
        ])
    assert [(r["k"], r["v"]) for r in json_lines(journal(store))[1:]] == [
        ("k", "kept"), ("n", "never")]


async def test_concurrent_restores_over_the_same_namespaces_both_land(store: Path) -> None:
    async with FileMemory(store) as memory:
        forward = [MemoryEntry(f"f{i}", i, ns, None, None) for i in range(20) for ns in "abc"]
        backward = [MemoryEntry(f"b{i}", i, ns, None, None) for i in range(20) for ns in "cba"]
        # The set holds "b" while both restores queue for their namespaces' locks.
        await asyncio.wait_for(
            asyncio.gather(memory.set("s", 1, "b"), memory.restore(forward),
                           memory.restore(backward)),
            timeout=30,
        )
        for ns in "abc":
            assert len(await memory.all(ns)) == 40 + (ns == "b")
