"""Keyword-overlap relevance: the default scorer of every core driver, and its index.

The same data and query give the same ordered hits on every core driver, because they all use
:func:`TokenOverlapScorer.keywords` on the same value text and the same ordering rule:

* score = the number of distinct query keywords found among the value's keywords (keys are
  never scored, a score of 0 is never a hit);
* order: score descending, then most recently stored first, then key ascending.

:class:`KeywordIndex` is the incremental inverted index that in-process stores
(``ArrayMemory``, ``FileMemory``) keep per namespace. Writes only mark a key as changed, and
the next search tokenises what changed since, so a ``set`` stays O(1) and a search costs what
the matching entries cost rather than a scan of the namespace.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from claw_memory.contracts import MemoryHit

__all__ = ["KeywordIndex", "TokenOverlapScorer", "value_text"]

# A maximal run of letters, where an apostrophe or hyphen between two letters stays inside.
# ``[^\W\d_]`` is "word character, not a digit, not underscore": the letters, plus a few
# non-decimal numerics (², ½) that :func:`_letters_only` filters out.
_WORD = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*")
_JOINERS: Final = str.maketrans("", "", "'’-")
MIN_LETTERS: Final = 3


def value_text(value: Any) -> str:
    """The text a value is scored on: a ``str`` itself, anything else its compact JSON."""
    if value.__class__ is str:
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _split_non_letters(word: str) -> list[str]:
    # Rare path: a non-ASCII match may hold numerics such as "²"; split on them.
    parts: list[str] = []
    current: list[str] = []
    for ch in word:
        if ch.isalpha() or ch in "'’-":
            current.append(ch)
        else:
            if current:
                parts.append("".join(current))
            current = []
    if current:
        parts.append("".join(current))
    out: list[str] = []
    for part in parts:
        out.extend(m.group() for m in _WORD.finditer(part))
    return out


def _keywords(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.casefold()):
        if not word.isascii() and not word.translate(_JOINERS).isalpha():
            for sub in _split_non_letters(word):
                if len(sub.translate(_JOINERS)) >= MIN_LETTERS:
                    seen[sub] = None
            continue
        if len(word) >= MIN_LETTERS and (
            len(word) - word.count("'") - word.count("’") - word.count("-") >= MIN_LETTERS
        ):
            seen[word] = None
    return list(seen)


class TokenOverlapScorer:
    """The default relevance: distinct shared keywords between query and value."""

    @staticmethod
    def keywords(text: str) -> list[str]:
        """Case-folded words of three or more letters, distinct, in first-occurrence order.

        A word is a maximal run of Unicode letters; an apostrophe or hyphen between two
        letters stays inside it (``don't``, ``e-mail``). Digits, ``_``, punctuation and spaces
        separate words: ``"Café au lait, 42 cups"`` gives ``["café", "lait", "cups"]``.
        """
        return _keywords(text)

    @staticmethod
    def score(query_keywords: Iterable[str], value: Any) -> int:
        """The number of distinct query keywords found among the value's keywords."""
        words = set(_keywords(value_text(value)))
        return sum(1 for word in set(query_keywords) if word in words)

    @staticmethod
    def rank(
        entries: Mapping[str, Any],
        query: str,
        limit: int = 5,
        namespace: str = "default",
        stored_at: Mapping[str, datetime | None] | None = None,
    ) -> list[MemoryHit]:
        """Rank a plain mapping of key to value, best first, at most ``limit`` hits.

        Later entries of ``entries`` count as more recent (dicts keep insertion order, and
        ``all()`` returns oldest first). For drivers without an index of their own.
        """
        if limit <= 0:
            return []
        query_words = set(_keywords(query))
        if not query_words:
            return []
        scored: list[tuple[int, int, str]] = []
        for position, (key, value) in enumerate(entries.items()):
            words = _keywords(value_text(value))
            score = sum(1 for word in words if word in query_words)
            if score:
                scored.append((-score, -position, key))
        best = heapq.nsmallest(limit, scored)
        times = stored_at or {}
        return [
            MemoryHit(key, entries[key], namespace, float(-neg), times.get(key))
            for neg, _, key in best
        ]


class KeywordIndex:
    """An incremental inverted index of one namespace's values, for keyword-overlap search.

    ``mark(key)`` records that a key's value changed or was removed; the work of tokenising is
    deferred to the next :meth:`search`, which reads the current value through ``lookup``.
    Not thread-safe: callers use it from one event loop (or under their own lock).
    """

    __slots__ = ("_postings", "_tokens", "changed")

    def __init__(self) -> None:
        self._postings: dict[str, set[str]] = {}
        self._tokens: dict[str, tuple[str, ...]] = {}
        #: Keys marked since the last search. ``index.changed[key] = None`` is :meth:`mark`
        #: without the call, for writers on a hot path.
        self.changed: dict[str, None] = {}

    def mark(self, key: str) -> None:
        """Note that ``key`` was set, overwritten or removed."""
        self.changed[key] = None

    def clear(self) -> None:
        """Forget everything (the namespace was flushed or reloaded)."""
        self._postings.clear()
        self._tokens.clear()
        self.changed.clear()

    def __len__(self) -> int:
        return len(self._tokens)

    def _drain(self, lookup: Callable[[str], tuple[Any, float] | None]) -> None:
        postings = self._postings
        tokens = self._tokens
        pending = self.changed
        if not pending:
            return
        changed = list(pending)
        pending.clear()
        for key in changed:
            old = tokens.pop(key, None)
            if old is not None:
                for word in old:
                    keys = postings.get(word)
                    if keys is not None:
                        keys.discard(key)
                        if not keys:
                            del postings[word]
            found = lookup(key)
            if found is None:
                continue
            words = tuple(_keywords(found[0]))
            tokens[key] = words
            for word in words:
                keys = postings.get(word)
                if keys is None:
                    postings[word] = {key}
                else:
                    keys.add(key)

    def search(
        self,
        query: str,
        limit: int,
        lookup: Callable[[str], tuple[Any, float] | None],
    ) -> list[tuple[str, int]]:
        """Return ``(key, score)`` pairs, best first, at most ``limit``.

        ``lookup(key)`` returns ``(text, recency)`` for a live key or ``None``, where ``text``
        is :func:`value_text` of the value and a higher recency means stored more recently.
        Entries that ``lookup`` reports absent are never returned.
        """
        if limit <= 0:
            return []
        query_words = _keywords(query)
        if not query_words:
            return []
        self._drain(lookup)
        counts: dict[str, int] = {}
        get = counts.get
        for word in query_words:
            for key in self._postings.get(word, ()):
                counts[key] = get(key, 0) + 1
        if not counts:
            return []
        buckets: dict[int, list[str]] = {}
        for key, score in counts.items():
            bucket = buckets.get(score)
            if bucket is None:
                buckets[score] = [key]
            else:
                bucket.append(key)
        result: list[tuple[str, int]] = []
        recency: dict[str, float] = {}
        for score in sorted(buckets, reverse=True):
            live: list[str] = []
            for key in buckets[score]:
                found = lookup(key)
                if found is not None:
                    recency[key] = found[1]
                    live.append(key)
            need = limit - len(result)
            best = heapq.nsmallest(need, live, key=lambda k: (-recency[k], k))
            result.extend((key, score) for key in best)
            if len(result) >= limit:
                break
        return result
