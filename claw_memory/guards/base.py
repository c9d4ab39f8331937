"""The guard contract and the ordered set the engine runs before every model call.

A guard is any object with ``name``, ``priority``, ``sees`` and ``scan(text)``; no base class is
needed, so a user's guard is a few lines. ``scan`` may be a plain method or ``async def`` (for a
guard that calls a moderation service). :class:`PatternGuard` is the building block of the
phrase-matching defaults and of users' own regex guards.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from claw_memory.errors import GuardBlockedError
from claw_memory.guards.confusables import fold_variants

__all__ = [
    "SEP",
    "Guard",
    "GuardBlock",
    "GuardSet",
    "PatternGuard",
    "Rule",
    "Sees",
    "any_word",
]

Sees: TypeAlias = Literal["raw", "augmented"]

#: One or more spaces or punctuation marks between two words of a phrase.
SEP = r"[\W_]+"


def any_word(*words: str) -> str:
    """A regex matching any of ``words`` as a whole word (no word character just before it).

    The boundary check sits in a lookbehind after each word instead of a leading ``\\b``: a
    regex that opens with plain letters lets the engine skip straight to candidate positions,
    which is several times faster on long messages.
    """
    return "(?:" + "|".join(rf"{word}(?<!\w{word})" for word in words) + ")"


@runtime_checkable
class Guard(Protocol):
    """Refuses a message before it reaches the model.

    ``sees`` picks the text scanned: ``"raw"`` is the user's message as typed, ``"augmented"`` is
    the message with the recall block prepended, so a recalled entry can block too. Lower
    ``priority`` runs first. ``scan`` returns a short human-readable reason to block (never
    the matched text itself), or ``None`` to let the message through; it may be ``async def``.
    """

    name: str
    priority: int
    sees: Sees

    def scan(self, text: str) -> str | Awaitable[str | None] | None: ...


@dataclass(frozen=True, slots=True)
class GuardBlock:
    """Why a message was refused, and by which guard."""

    reason: str
    guard: str

    def error(self) -> GuardBlockedError:
        """The exception the engine raises for this block."""
        return GuardBlockedError(self.reason, self.guard)


class GuardSet:
    """An ordered, name-keyed collection of guards; the first guard to block wins.

    Guards run by ascending ``priority``; guards of equal priority run in the order they were
    added. Names are unique, so a default can be swapped out with ``remove`` then ``add``.
    A guard that raises is not swallowed: the caller decides whether that fails the call.
    """

    def __init__(self, guards: Iterable[Guard] = ()) -> None:
        self._guards: list[Guard] = []
        for guard in guards:
            self.add(guard)

    def add(self, guard: Guard) -> None:
        """Add ``guard``; raises ``ValueError`` if its name is taken or ``sees`` is unknown."""
        if not isinstance(guard, Guard):
            raise TypeError(
                f"{type(guard).__name__} is not a guard: it needs name, priority, sees and scan()"
            )
        if guard.sees not in ("raw", "augmented"):
            raise ValueError(
                f"guard {guard.name!r}: sees must be 'raw' or 'augmented', not {guard.sees!r}"
            )
        if guard.name in self:
            raise ValueError(f"a guard named {guard.name!r} is already in the set")
        self._guards.append(guard)

    def remove(self, name: str) -> None:
        """Drop the guard called ``name``; raises ``KeyError`` if there is none."""
        for index, guard in enumerate(self._guards):
            if guard.name == name:
                del self._guards[index]
                return
        raise KeyError(name)

    def get(self, name: str) -> Guard:
        """The guard called ``name``; raises ``KeyError`` if there is none."""
        for guard in self._guards:
            if guard.name == name:
                return guard
        raise KeyError(name)

    def names(self) -> list[str]:
        """Guard names in the order they run."""
        return [guard.name for guard in self._ordered()]

    def __contains__(self, name: object) -> bool:
        return any(guard.name == name for guard in self._guards)

    def __iter__(self) -> Iterator[Guard]:
        return iter(self._ordered())

    def __len__(self) -> int:
        return len(self._guards)

    def __repr__(self) -> str:
        return f"GuardSet({self.names()!r})"

    def _ordered(self) -> list[Guard]:
        # sorted() is stable, so equal priorities keep insertion order. Sorting per call lets a
        # caller change a guard's priority after adding it.
        return sorted(self._guards, key=lambda guard: guard.priority)

    async def check(self, raw: str, augmented: str) -> GuardBlock | None:
        """Run the guards in order; the first reason returned blocks, else ``None``."""
        for guard in self._ordered():
            result = guard.scan(raw if guard.sees == "raw" else augmented)
            if inspect.isawaitable(result):
                result = await result
            if result is not None:
                return GuardBlock(reason=result or "blocked", guard=guard.name)
        return None


Accept: TypeAlias = Callable[[str, "re.Match[str]"], bool]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern of a :class:`PatternGuard` and the reason it reports.

    ``accept(text, match)``, when given, confirms a match (a checksum, the words around it);
    rejected matches are skipped and the search goes on.

    Three optional pre-checks only save time; they must never change what matches: ``needles``
    (the rule runs only if one of these substrings occurs), ``min_digits`` (skip text with fewer
    ASCII digits) and ``within`` (search only inside the spans this pattern finds, plus one
    character after each so lookaheads still see it; lookbehinds see the whole text).
    """

    pattern: re.Pattern[str]
    reason: str
    accept: Accept | None = None
    needles: tuple[str, ...] = ()
    min_digits: int = 0
    within: re.Pattern[str] | None = None

    @classmethod
    def of(
        cls,
        pattern: str,
        reason: str,
        accept: Accept | None = None,
        *,
        needles: Sequence[str] = (),
        min_digits: int = 0,
        within: re.Pattern[str] | None = None,
    ) -> Rule:
        """Compile ``pattern`` once, at definition time."""
        return cls(re.compile(pattern), reason, accept, tuple(needles), min_digits, within)

    def matches(self, text: str, spans: Callable[[re.Pattern[str]], list[range]]) -> bool:
        """True when the pattern matches ``text`` and ``accept`` (if any) confirms it."""
        if self.within is None:
            found: Iterable[re.Match[str]] = self.pattern.finditer(text)
        else:
            end = len(text)
            found = (
                match
                for span in spans(self.within)
                for match in self.pattern.finditer(text, span.start, min(end, span.stop + 1))
            )
        accept = self.accept
        return any(accept is None or accept(text, match) for match in found)


class _SpanCache:
    """The spans of each ``within`` pattern in one text, found once per scan."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._found: dict[re.Pattern[str], list[range]] = {}

    def __call__(self, pattern: re.Pattern[str]) -> list[range]:
        spans = self._found.get(pattern)
        if spans is None:
            spans = [range(*match.span()) for match in pattern.finditer(self._text)]
            self._found[pattern] = spans
        return spans


class PatternGuard:
    """A guard made of regex rules, matched against folded text.

    With ``fold=True`` (the default) the text is compatibility-normalised, look-alike letters
    are mapped to Latin, invisible characters removed and everything lowercased before matching
    (see :mod:`claw_memory.guards.confusables`), so rules are written in lowercase ASCII and
    still catch "ＩＧＮＯＲＥ" or Greek omicrons.
    """

    def __init__(
        self,
        name: str,
        rules: Sequence[Rule],
        *,
        priority: int = 100,
        sees: Sees = "augmented",
        fold: bool = True,
    ) -> None:
        self.name = name
        self.priority = priority
        self.sees: Sees = sees
        self.rules = tuple(rules)
        self.fold = fold

    def scan(self, text: str) -> str | None:
        """The reason of the first rule that matches, else ``None``."""
        variants = fold_variants(text) if self.fold else (text,)
        for variant in variants:
            digits = -1
            spans = _SpanCache(variant)
            for rule in self.rules:
                if rule.needles and not any(needle in variant for needle in rule.needles):
                    continue
                if rule.min_digits:
                    if digits < 0:
                        digits = sum(map(variant.count, "0123456789"))
                    if digits < rule.min_digits:
                        continue
                if rule.matches(variant, spans):
                    return rule.reason
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, priority={self.priority})"
