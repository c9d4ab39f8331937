"""TokenOverlapScorer and KeywordIndex: the default relevance of every core driver."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claw_memory import KeywordIndex, TokenOverlapScorer
from claw_memory.scoring import value_text

keywords = TokenOverlapScorer.keywords


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Café au lait, 42 cups", ["café", "lait", "cups"]),
        ("Don't e-mail me", ["don't", "e-mail"]),
        ("The the THE tHe", ["the"]),
        ("ab abc a-b x'y", ["abc"]),
        ("snake_case_words", ["snake", "case", "words"]),
        ("abc123def", ["abc", "def"]),
        ("-dash- 'quoted' it's", ["dash", "quoted", "it's"]),
        ("well--known rock'n'roll", ["well", "known", "rock'n'roll"]),
        ("Straße STRASSE", ["strasse"]),
        ("naïve ΑΘΗΝΑ Москва 東京都", ["naïve", "αθηνα", "москва", "東京都"]),
        ("x²yz abc", ["abc"]),
        ("", []),
        ("?? 42 !!", []),
    ],
)
def test_keywords_follow_the_word_rules(text: str, expected: list[str]) -> None:
    assert keywords(text) == expected


def test_value_text_is_the_string_or_compact_json() -> None:
    assert value_text("plain") == "plain"
    assert value_text({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    assert value_text(None) == "null"


def test_rank_orders_by_score_then_recency_then_key() -> None:
    entries = {"b": "apple pie", "a": "apple pie", "c": "apple banana", "d": "nothing"}
    hits = TokenOverlapScorer.rank(entries, "apple banana", 10, "ns")
    assert [(h.key, h.score, h.namespace) for h in hits] == [
        ("c", 2.0, "ns"), ("a", 1.0, "ns"), ("b", 1.0, "ns"),
    ]
    assert TokenOverlapScorer.rank(entries, "apple", 0) == []
    assert TokenOverlapScorer.rank(entries, "apple", -1) == []


def test_score_counts_distinct_query_words() -> None:
    assert TokenOverlapScorer.score(keywords("gold gold tier"), "gold tier tier") == 2


def _lookup(store: dict[str, tuple[Any, int]]) -> Any:
    def lookup(key: str) -> tuple[str, float] | None:
        found = store.get(key)
        return None if found is None else (value_text(found[0]), found[1])

    return lookup


sentences = st.lists(
    st.sampled_from(["gold", "tier", "customer", "apple", "pie", "zebra", "é-mail", "ox"]),
    max_size=6,
).map(" ".join)


@settings(max_examples=200)
@given(
    operations=st.lists(
        st.tuples(st.sampled_from("abcdefg"), st.one_of(st.none(), sentences)), max_size=40
    ),
    query=sentences,
    limit=st.integers(0, 8),
)
def test_index_ranks_exactly_like_a_scan(
    operations: list[tuple[str, str | None]], query: str, limit: int
) -> None:
    index = KeywordIndex()
    store: dict[str, tuple[Any, int]] = {}
    for seq, (key, value) in enumerate(operations):
        store.pop(key, None)
        if value is not None:
            store[key] = (value, seq)
        index.mark(key)
        if seq % 7 == 0:  # search part-way, so later writes update a drained index
            index.search(query, limit, _lookup(store))
    got = index.search(query, limit, _lookup(store))
    ordered = {k: v for k, (v, _) in sorted(store.items(), key=lambda item: item[1][1])}
    expected = TokenOverlapScorer.rank(ordered, query, limit)
    assert got == [(h.key, int(h.score)) for h in expected]


def test_index_skips_keys_that_lookup_reports_absent() -> None:
    index = KeywordIndex()
    store: dict[str, tuple[Any, int]] = {"a": ("apple", 1), "b": ("apple", 2)}
    index.mark("a")
    index.mark("b")
    lookup = _lookup(store)
    assert index.search("apple", 5, lookup) == [("b", 1), ("a", 1)]
    del store["b"]  # e.g. expired, not yet marked
    assert index.search("apple", 5, lookup) == [("a", 1)]


def test_index_search_does_not_rescan_unchanged_entries() -> None:
    index = KeywordIndex()
    calls: list[str] = []
    store = {f"k{i}": (f"word{i % 10} common", i) for i in range(200)}

    def lookup(key: str) -> tuple[str, float] | None:
        calls.append(key)
        found = store.get(key)
        return None if found is None else (found[0], found[1])

    for key in store:
        index.mark(key)
    index.search("rare", 3, lookup)
    calls.clear()
    index.search("unmatched", 3, lookup)
    assert calls == []  # nothing pending, nothing matching: no entry visited
    assert len(index) == 200
