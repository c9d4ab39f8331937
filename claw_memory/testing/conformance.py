"""The conformance suite: every rule of the memory contract, as tests any driver can run.

See :mod:`claw_memory.testing` for how to use it. Each test states the rule it checks in its
name. Tests use only the public contract, so they run the same against wrappers and third-party
drivers.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claw_memory import hooks
from claw_memory.contracts import (
    InspectableMemory,
    Memory,
    MemoryEntry,
    MemoryHit,
    RestorableMemory,
    SearchableMemory,
)
from claw_memory.errors import (
    InvalidKeyError,
    InvalidNamespaceError,
    InvalidTTLError,
    InvalidValueError,
    KeyTypeError,
    MemoryException,
)
from claw_memory.scoring import TokenOverlapScorer

__all__ = ["MemoryConformance", "ReferenceMemory"]

MemoryFactory = Callable[[], AbstractAsyncContextManager[Memory]]

# Every JSON type, nested, including the awkward ones: unicode, empty containers, -0.0, big ints.
JSON_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -17,
    2**63 + 1,
    3.5,
    -0.0,
    1e-300,
    "",
    "plain text",
    "ünïcödé ✓ 🐍 \u0000 nul and\nnewline",
    [],
    {},
    [1, "two", None, [3.0, {"four": 4}]],
    {"nested": {"list": [True, False, None], "empty": {}, "text": "é"}, "n": 1},
]

BAD_NAMESPACES: list[tuple[object, str]] = [
    ("", "empty"),
    ("n" * 101, "100"),
    ("a\x00b", "NUL"),
    ("a..b", ".."),
    ("a/b", "/"),
    ("a\\b", "/"),
    ("a b", "a-z"),
    ("ünï", "a-z"),
    ("a;b", "a-z"),
]

BAD_KEYS: list[object] = ["", "k" * 256, "a\x00b", 1, None, b"bytes", ("t",)]

BAD_VALUES: list[object] = [
    {1, 2},
    b"bytes",
    object(),
    float("nan"),
    float("inf"),
    -float("inf"),
    {1: "int key"},
    {"ok": [1, {2}]},
    [float("nan")],
    {"deep": {"deeper": bytearray(b"x")}},
]

BAD_TTLS: list[object] = [-1, -0.5, float("nan"), float("inf"), True, False, "10", [1]]

TTL_DEADLINE = 10.0


async def _wait_until(predicate: Callable[[], Any], deadline: float = TTL_DEADLINE) -> None:
    """Poll an async predicate until it is true, failing after ``deadline`` seconds."""
    end = time.monotonic() + deadline
    while not await predicate():
        if time.monotonic() > end:
            pytest.fail(f"condition not met within {deadline} s")
        await asyncio.sleep(0.02)


def _hit_tuples(hits: list[MemoryHit]) -> list[tuple[str, Any, float]]:
    return [(h.key, h.value, h.score) for h in hits]


class ReferenceMemory:
    """The contract reduced to a dict per namespace, for property tests (no TTLs)."""

    def __init__(self) -> None:
        self.spaces: dict[str, dict[str, Any]] = {}

    def set(self, key: str, value: Any, namespace: str) -> None:
        space = self.spaces.setdefault(namespace, {})
        space.pop(key, None)
        space[key] = _normalised(value)

    def get(self, key: str, namespace: str) -> Any:
        return self.spaces.get(namespace, {}).get(key)

    def has(self, key: str, namespace: str) -> bool:
        return key in self.spaces.get(namespace, {})

    def forget(self, key: str, namespace: str) -> None:
        self.spaces.get(namespace, {}).pop(key, None)

    def flush(self, namespace: str) -> None:
        self.spaces.pop(namespace, None)

    def all(self, namespace: str) -> dict[str, Any]:
        return dict(self.spaces.get(namespace, {}))

    def search(self, query: str, limit: int, namespace: str) -> list[tuple[str, Any, float]]:
        return _hit_tuples(TokenOverlapScorer.rank(self.all(namespace), query, limit, namespace))


def _normalised(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_normalised(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items()}
    return value


_WORDS = ["gold", "tier", "customer", "discount", "French", "language", "café", "don't", "ab"]
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=12)
    | st.lists(st.sampled_from(_WORDS), max_size=5).map(" ".join)
)
_json_values = st.recursive(
    _json_scalars,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from(["k", "K", "key:1", "a/b", "emoji 🐍", "x" * 255]) | st.text(
    alphabet=st.characters(exclude_characters="\x00", exclude_categories=["Cs"]),
    min_size=1,
    max_size=8,
)
_namespaces = st.sampled_from(["default", "user:1", "user.1", "user_1", "a", "a:b"])
_queries = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join)
_operations = st.lists(
    st.one_of(
        st.tuples(st.just("set"), _keys, _json_values, _namespaces),
        st.tuples(st.just("get"), _keys, _namespaces),
        st.tuples(st.just("has"), _keys, _namespaces),
        st.tuples(st.just("forget"), _keys, _namespaces),
        st.tuples(st.just("all"), _namespaces),
        st.tuples(st.just("flush"), _namespaces),
        st.tuples(st.just("search"), _queries, st.integers(-1, 4), _namespaces),
    ),
    max_size=30,
)


class MemoryConformance:
    """Subclass in a test module and provide the ``memory_factory`` fixture.

    Class attributes tune the suite for a backend: ``property_examples`` (hypothesis examples
    for the reference-model test) and ``ttl`` (a short TTL in seconds for expiry tests).
    """

    property_examples: ClassVar[int] = 40
    ttl: ClassVar[float] = 0.25

    @pytest.fixture
    def memory_factory(self) -> MemoryFactory:
        raise NotImplementedError("provide a memory_factory fixture")

    @pytest.fixture
    async def memory(self, memory_factory: MemoryFactory) -> AsyncIterator[Memory]:
        async with memory_factory() as memory:
            yield memory

    @pytest.fixture
    def events(self) -> Iterator[list[dict[str, Any]]]:
        seen: list[dict[str, Any]] = []

        def record(payload: dict[str, Any]) -> None:
            seen.append(dict(payload))

        names = ("memory.read", "memory.write", "memory.forget")
        for name in names:
            hooks.on(name, record)
        try:
            yield seen
        finally:
            for name in names:
                hooks.off(name, record)

    # -- round trips ---------------------------------------------------------------------------
    @pytest.mark.parametrize("value", JSON_VALUES, ids=[repr(v)[:30] for v in JSON_VALUES])
    async def test_set_then_get_returns_an_equal_value(self, memory: Memory, value: Any) -> None:
        await memory.set("k", value)
        got = await memory.get("k")
        assert got == value
        assert type(got) is type(value)
        if isinstance(value, float):
            assert math.copysign(1.0, got) == math.copysign(1.0, value)
        assert await memory.has("k")

    async def test_tuple_comes_back_as_list(self, memory: Memory) -> None:
        await memory.set("t", (1, (2, "three")))
        assert await memory.get("t") == [1, [2, "three"]]

    async def test_get_of_absent_key_is_none_and_has_is_false(self, memory: Memory) -> None:
        assert await memory.get("missing") is None
        assert await memory.has("missing") is False

    async def test_stored_none_is_present(self, memory: Memory) -> None:
        await memory.set("nothing", None)
        assert await memory.has("nothing") is True
        assert await memory.get("nothing") is None
        assert await memory.all() == {"nothing": None}

    async def test_set_overwrites(self, memory: Memory) -> None:
        await memory.set("k", "one")
        await memory.set("k", {"two": 2})
        assert await memory.get("k") == {"two": 2}

    async def test_keys_are_case_sensitive_and_take_any_character(self, memory: Memory) -> None:
        keys = ["Key", "key", "a:b/c d", "🐍 emoji", "x" * 255, "tab\tand\nnewline", "*?[]"]
        for i, key in enumerate(keys):
            await memory.set(key, i)
        for i, key in enumerate(keys):
            assert await memory.get(key) == i
        assert list(await memory.all()) == keys

    async def test_mutating_a_value_after_set_does_not_change_it(self, memory: Memory) -> None:
        value: dict[str, Any] = {"list": [1, 2], "inner": {"a": 1}}
        await memory.set("k", value)
        value["list"].append(3)
        value["inner"]["a"] = 99
        value["new"] = True
        assert await memory.get("k") == {"list": [1, 2], "inner": {"a": 1}}

    async def test_mutating_a_value_after_get_does_not_change_it(self, memory: Memory) -> None:
        await memory.set("k", {"list": [1, 2]})
        got = await memory.get("k")
        got["list"].append(3)
        assert await memory.get("k") == {"list": [1, 2]}
        everything = await memory.all()
        everything["k"]["list"].clear()
        assert await memory.get("k") == {"list": [1, 2]}

    # -- forget, flush, all --------------------------------------------------------------------
    async def test_forget_removes_the_key_only(self, memory: Memory) -> None:
        await memory.set("a", 1)
        await memory.set("b", 2)
        await memory.forget("a")
        assert await memory.has("a") is False
        assert await memory.all() == {"b": 2}

    async def test_forget_of_absent_key_is_not_an_error(self, memory: Memory) -> None:
        await memory.forget("never-set")
        await memory.forget("never-set", "other-namespace")
        assert await memory.all() == {}

    async def test_flush_empties_that_namespace_only(self, memory: Memory) -> None:
        await memory.set("k", 1)
        await memory.set("k", 2, "other")
        await memory.set("k", 3, "default:sub")
        await memory.flush()
        assert await memory.all() == {}
        assert await memory.get("k") is None
        assert await memory.all("other") == {"k": 2}
        assert await memory.all("default:sub") == {"k": 3}
        await memory.flush("never-used")

    async def test_all_is_oldest_first_and_overwrite_moves_to_newest(self, memory: Memory) -> None:
        for key in ["c", "a", "b"]:
            await memory.set(key, key.upper())
        assert list(await memory.all()) == ["c", "a", "b"]
        await memory.set("c", "again")
        assert await memory.all() == {"a": "A", "b": "B", "c": "again"}
        assert list(await memory.all()) == ["a", "b", "c"]

    async def test_all_of_empty_namespace_is_empty_dict(self, memory: Memory) -> None:
        assert await memory.all("empty") == {}

    async def test_set_after_forget_is_newest(self, memory: Memory) -> None:
        await memory.set("a", 1)
        await memory.set("b", 2)
        await memory.forget("a")
        await memory.set("a", 3)
        assert list(await memory.all()) == ["b", "a"]

    # -- namespaces ----------------------------------------------------------------------------
    async def test_similar_namespaces_are_kept_apart(self, memory: Memory) -> None:
        for namespace in ["user:1", "user.1", "user_1", "user-1", "USER:1"]:
            await memory.set("k", namespace, namespace)
        for namespace in ["user:1", "user.1", "user_1", "user-1", "USER:1"]:
            assert await memory.get("k", namespace) == namespace
            assert await memory.all(namespace) == {"k": namespace}

    async def test_namespace_does_not_see_its_children(self, memory: Memory) -> None:
        await memory.set("x", 1, "a")
        await memory.set("y", 2, "a:b")
        await memory.set("z", 3, "ab")
        assert await memory.all("a") == {"x": 1}
        assert await memory.all("a:b") == {"y": 2}
        await memory.flush("a")
        assert await memory.all("a:b") == {"y": 2}
        assert await memory.all("ab") == {"z": 3}

    async def test_longest_allowed_namespace_works(self, memory: Memory) -> None:
        namespace = "n" * 100
        await memory.set("k", 1, namespace)
        assert await memory.get("k", namespace) == 1

    @pytest.mark.parametrize(("namespace", "rule"), BAD_NAMESPACES)
    async def test_every_method_rejects_a_bad_namespace(
        self, memory: Memory, namespace: Any, rule: str
    ) -> None:
        calls: list[Callable[[], Any]] = [
            lambda: memory.get("k", namespace),
            lambda: memory.set("k", 1, namespace),
            lambda: memory.forget("k", namespace),
            lambda: memory.flush(namespace),
            lambda: memory.all(namespace),
            lambda: memory.has("k", namespace),
        ]
        if isinstance(memory, SearchableMemory):
            calls.append(lambda: memory.search("query words", 5, namespace))
            calls.append(lambda: memory.search("query words", 0, namespace))
        for call in calls:
            with pytest.raises(InvalidNamespaceError, match=f"(?i){_rule_pattern(rule)}"):
                await call()

    @pytest.mark.parametrize("namespace", [None, 1, b"default"])
    async def test_non_str_namespace_is_rejected(self, memory: Memory, namespace: Any) -> None:
        with pytest.raises(InvalidNamespaceError):
            await memory.set("k", 1, namespace)
        with pytest.raises(InvalidNamespaceError):
            await memory.get("k", namespace)

    async def test_namespace_rules_apply_in_order(self, memory: Memory) -> None:
        # "../x" breaks rules 4 (..) and 5 (/): the earlier rule is the one reported.
        with pytest.raises(InvalidNamespaceError, match=r"\.\."):
            await memory.set("k", 1, "../x")
        # a 101-character namespace with a NUL is reported for its length first.
        with pytest.raises(InvalidNamespaceError, match="100"):
            await memory.set("k", 1, "\x00" + "n" * 100)

    # -- keys, values, TTLs: rejected before anything is written --------------------------------
    @pytest.mark.parametrize("key", BAD_KEYS, ids=[repr(k)[:20] for k in BAD_KEYS])
    async def test_bad_key_is_rejected_by_every_method(self, memory: Memory, key: Any) -> None:
        error = InvalidKeyError if isinstance(key, str) else KeyTypeError
        for call in (
            lambda: memory.get(key),
            lambda: memory.set(key, 1),
            lambda: memory.forget(key),
            lambda: memory.has(key),
        ):
            with pytest.raises(error):
                await call()
        assert await memory.all() == {}

    @pytest.mark.parametrize("value", BAD_VALUES, ids=[type(v).__name__ for v in BAD_VALUES])
    async def test_bad_value_is_rejected_and_nothing_is_written(
        self, memory: Memory, value: Any
    ) -> None:
        await memory.set("existing", "kept")
        with pytest.raises(InvalidValueError):
            await memory.set("existing", value)
        with pytest.raises(InvalidValueError):
            await memory.set("new", value)
        assert await memory.all() == {"existing": "kept"}

    async def test_bad_value_error_does_not_echo_the_value(self, memory: Memory) -> None:
        with pytest.raises(InvalidValueError) as caught:
            await memory.set("k", {"secret-password": {b"hunter2"}})
        assert "hunter2" not in str(caught.value)

    async def test_self_containing_value_is_rejected(self, memory: Memory) -> None:
        loop: list[Any] = []
        loop.append(loop)
        with pytest.raises(InvalidValueError):
            await memory.set("k", loop)
        assert await memory.has("k") is False

    @pytest.mark.parametrize("ttl", BAD_TTLS, ids=[repr(t) for t in BAD_TTLS])
    async def test_bad_ttl_is_rejected_and_nothing_is_written(
        self, memory: Memory, ttl: Any
    ) -> None:
        await memory.set("existing", "kept")
        with pytest.raises(InvalidTTLError):
            await memory.set("existing", "new", ttl=ttl)
        assert await memory.all() == {"existing": "kept"}

    # -- TTL -----------------------------------------------------------------------------------
    @pytest.mark.parametrize("ttl", [None, 0, 0.0, 3600, 86400.5])
    async def test_entry_with_long_or_no_ttl_is_present(self, memory: Memory, ttl: Any) -> None:
        await memory.set("k", "v", ttl=ttl)
        assert await memory.get("k") == "v"
        assert await memory.has("k")
        assert await memory.all() == {"k": "v"}

    async def test_entry_expires_from_every_read(self, memory: Memory) -> None:
        await memory.set("short", "expiring words here", ttl=self.ttl)
        await memory.set("long", "staying words here", ttl=3600)

        async def gone() -> bool:
            return not await memory.has("short")

        await _wait_until(gone)
        assert await memory.get("short") is None
        assert await memory.all() == {"long": "staying words here"}
        if isinstance(memory, SearchableMemory):
            hits = await memory.search("words here")
            assert [h.key for h in hits] == ["long"]

    async def test_set_without_ttl_replaces_an_expiring_entry(self, memory: Memory) -> None:
        await memory.set("k", "first", ttl=self.ttl)
        await memory.set("k", "second", ttl=0)
        await memory.set("marker", "m", ttl=self.ttl)

        async def marker_gone() -> bool:
            return not await memory.has("marker")

        await _wait_until(marker_gone)
        assert await memory.get("k") == "second"

    # -- search --------------------------------------------------------------------------------
    async def test_search_seed_example(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        await memory.set("customer_tier", "gold tier customer")
        await memory.set("discount_rule", "gold customer discount is 10 percent")
        await memory.set("preferred_language", "French language preferred")
        hits = await memory.search("What discount do I get for my customer tier?", 3)
        assert [(h.key, h.score) for h in hits] == [("discount_rule", 2.0), ("customer_tier", 2.0)]
        assert hits[0].value == "gold customer discount is 10 percent"
        assert all(h.namespace == "default" for h in hits)

    async def test_search_orders_by_score_then_newest_then_key(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        await memory.set("one", "apple")
        await memory.set("three", "apple banana cherry")
        await memory.set("two-old", "banana apple")
        await memory.set("two-new", "cherry apple")
        hits = await memory.search("apple banana cherry", 10)
        assert [(h.key, h.score) for h in hits] == [
            ("three", 3.0), ("two-new", 2.0), ("two-old", 2.0), ("one", 1.0),
        ]
        await memory.set("two-old", "banana apple")  # now the newest of the 2-word ties
        hits = await memory.search("apple banana cherry", 2)
        assert [h.key for h in hits] == ["three", "two-old"]

    async def test_search_hit_carries_namespace_value_and_utc_time(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        await memory.set("fact", {"note": "remember the anniversary"}, "user:7")
        (hit,) = await memory.search("anniversary", 5, "user:7")
        assert hit == MemoryHit("fact", {"note": "remember the anniversary"}, "user:7", 1.0,
                                hit.stored_at)
        if hit.stored_at is not None:
            assert hit.stored_at.utcoffset() == timedelta(0)

    async def test_search_never_scores_keys_or_short_words(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        await memory.set("gold", "platinum status")
        await memory.set("short", "an ox is by me")
        assert await memory.search("gold") == []
        assert await memory.search("an ox is by me") == []

    async def test_search_is_case_folded_and_keeps_inner_apostrophes(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        await memory.set("a", "Don't forget the CAFÉ")
        await memory.set("b", "dont forget")
        hits = await memory.search("don't café", 5)
        assert [(h.key, h.score) for h in hits] == [("a", 2.0)]

    async def test_search_respects_limit_and_namespace(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        for i in range(6):
            await memory.set(f"k{i}", "shared words", "ns")
        await memory.set("other", "shared words")
        assert len(await memory.search("shared", 4, "ns")) == 4
        assert [h.key for h in await memory.search("shared", 10, "ns")] == [
            f"k{i}" for i in reversed(range(6))
        ]
        assert await memory.search("shared", 0, "ns") == []
        assert await memory.search("shared", -3, "ns") == []
        assert [h.key for h in await memory.search("shared", 5)] == ["other"]

    async def test_search_sees_overwrites_and_forgets(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        await memory.set("a", "alpha words")
        await memory.set("b", "alpha words")
        assert {h.key for h in await memory.search("alpha")} == {"a", "b"}
        await memory.set("a", "omega text")
        await memory.forget("b")
        assert await memory.search("alpha") == []
        assert [h.key for h in await memory.search("omega")] == ["a"]
        await memory.flush()
        assert await memory.search("omega") == []

    async def test_search_of_empty_query_or_namespace_is_empty(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        assert await memory.search("anything at all", 5, "empty") == []
        await memory.set("k", "some words")
        assert await memory.search("", 5) == []
        assert await memory.search("?? 42 !!", 5) == []

    async def test_search_scores_json_text_of_non_string_values(self, memory: Memory) -> None:
        if not isinstance(memory, SearchableMemory):
            pytest.skip("not searchable")
        await memory.set("profile", {"city": "Lisbon", "pets": ["cat"]})
        await memory.set("flag", True)
        hits = await memory.search("city lisbon true", 5)
        assert [(h.key, h.score) for h in hits] == [("profile", 2.0), ("flag", 1.0)]

    # -- inspection (optional) -----------------------------------------------------------------
    async def test_inspection_lists_namespaces_and_entries_with_expiry(
        self, memory: Memory
    ) -> None:
        if not isinstance(memory, InspectableMemory):
            pytest.skip("not inspectable")
        await memory.set("b", "B", ttl=0)
        await memory.set("a", {"x": [1]}, ttl=3600)
        await memory.set("k", 1, "user:1", ttl=0)
        await memory.set("gone", 1, "empty-later", ttl=0)
        await memory.forget("gone", "empty-later")
        try:
            namespaces = await memory.namespaces()
        except MemoryException:
            pytest.skip("a wrapper over a driver that cannot list its namespaces")
        assert namespaces == ["default", "user:1"]
        now = time.time()
        entries = await memory.entries()
        assert [(e.key, e.value, e.namespace) for e in entries] == [
            ("b", "B", "default"), ("a", {"x": [1]}, "default"),
        ]
        assert entries[0].expires_at is None
        expires = entries[1].expires_at
        assert expires is not None
        assert abs(expires.timestamp() - (now + 3600)) < 60
        assert expires.utcoffset() == timedelta(0)
        assert entries[0].stored_at is not None
        assert entries[0].stored_at <= entries[1].stored_at  # type: ignore[operator]
        assert await memory.entries("never-used") == []
        with pytest.raises(InvalidNamespaceError):
            await memory.entries("bad/namespace")

    async def test_restore_writes_in_order_with_absolute_expiry(self, memory: Memory) -> None:
        if not isinstance(memory, RestorableMemory):
            pytest.skip("not restorable")
        await memory.set("a", "old", ttl=0)
        await memory.set("z", "stays first", ttl=0)
        now = datetime.now(UTC)
        later = datetime.fromtimestamp(round(now.timestamp() + 3600, 3), UTC)
        await memory.restore([
            MemoryEntry("a", {"restored": [1]}, "default", None, later),
            MemoryEntry("b", "never expires", "default", None, None),
            MemoryEntry("gone", "expired already", "default", None, now - timedelta(seconds=5)),
            MemoryEntry("k", 1, "user:1", None, None),
        ])
        assert list((await memory.all()).items()) == [
            ("z", "stays first"), ("a", {"restored": [1]}), ("b", "never expires"),
        ]
        assert await memory.all("user:1") == {"k": 1}
        if isinstance(memory, InspectableMemory):
            try:
                entries = {e.key: e for e in await memory.entries()}
            except MemoryException:
                return
            if entries["a"].stored_at is None:
                return  # a wrapper over a driver that keeps no times
            restored = entries["a"].expires_at
            assert restored is not None
            assert abs(restored.timestamp() - later.timestamp()) < 0.002
            assert entries["b"].expires_at is None  # None means never, whatever the default

    async def test_restore_validates_every_entry_before_writing_any(self, memory: Memory) -> None:
        if not isinstance(memory, RestorableMemory):
            pytest.skip("not restorable")
        good = MemoryEntry("good", 1, "default", None, None)
        for bad in (
            MemoryEntry("", 1, "default", None, None),
            MemoryEntry("k", {1, 2}, "default", None, None),
            MemoryEntry("k", 1, "bad/ns", None, None),
        ):
            with pytest.raises((InvalidKeyError, InvalidValueError, InvalidNamespaceError)):
                await memory.restore([good, bad])
        assert await memory.all() == {}

    # -- events --------------------------------------------------------------------------------
    async def test_reads_writes_and_forgets_fire_events_without_values(
        self, memory: Memory, events: list[dict[str, Any]]
    ) -> None:
        await memory.set("secret-key", "secret value text", "ev", ttl=0)
        await memory.set("timed", "another secret", "ev", ttl=30)
        await memory.get("secret-key", "ev")
        await memory.get("absent", "ev")
        await memory.forget("secret-key", "ev")
        by_name = [(e["event"], e["key"]) for e in events]
        assert by_name == [
            ("memory.write", "secret-key"),
            ("memory.write", "timed"),
            ("memory.read", "secret-key"),
            ("memory.read", "absent"),
            ("memory.forget", "secret-key"),
        ]
        assert events[0]["ttl"] is None
        assert events[1]["ttl"] == 30
        assert [e["hit"] for e in events if e["event"] == "memory.read"] == [True, False]
        for event in events:
            assert event["namespace"] == "ev"
            assert isinstance(event["driver"], str)
            assert "secret" not in repr({k: v for k, v in event.items() if k != "key"})

    # -- concurrency ---------------------------------------------------------------------------
    async def test_concurrent_sets_all_land(self, memory: Memory) -> None:
        await asyncio.gather(*(memory.set(f"k{i}", i, "conc") for i in range(50)))
        assert sorted((await memory.all("conc")).items()) == sorted(
            (f"k{i}", i) for i in range(50)
        )

    # -- against a reference model -------------------------------------------------------------
    def test_random_operations_match_the_reference_model(
        self, memory_factory: MemoryFactory
    ) -> None:
        @settings(
            max_examples=self.property_examples,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(operations=_operations)
        def run(operations: list[tuple[Any, ...]]) -> None:
            asyncio.run(_replay(memory_factory, operations))

        run()


def _rule_pattern(rule: str) -> str:
    return {
        "empty": "empty",
        "100": "100",
        "NUL": "NUL",
        "..": r"'\.\.'",
        "/": "'/'",
        "a-z": "a-z",
    }[rule]


async def _replay(memory_factory: MemoryFactory, operations: list[tuple[Any, ...]]) -> None:
    model = ReferenceMemory()
    async with memory_factory() as memory:
        for step, operation in enumerate(operations):
            name, *args = operation
            where = f"step {step}: {name}{tuple(args)!r}"
            if name == "set":
                key, value, namespace = args
                await memory.set(key, value, namespace)
                model.set(key, value, namespace)
            elif name == "get":
                assert await memory.get(*args) == model.get(*args), where
            elif name == "has":
                assert await memory.has(*args) == model.has(*args), where
            elif name == "forget":
                await memory.forget(*args)
                model.forget(*args)
            elif name == "all":
                got = await memory.all(*args)
                expected = model.all(*args)
                assert list(got.items()) == list(expected.items()), where
            elif name == "flush":
                await memory.flush(*args)
                model.flush(*args)
            elif name == "search" and isinstance(memory, SearchableMemory):
                query, limit, namespace = args
                got_hits = _hit_tuples(await memory.search(query, limit, namespace))
                assert got_hits == model.search(query, limit, namespace), where
