"""The default guard set, plus the two guards that are not phrase lists: length and Unicode.

Order (lower priority runs first): ``length`` (10, raw text), ``unicode`` (20),
``prompt_injection`` (30), ``role_switch`` (40), ``code_injection`` (50), ``sql`` (60, raw
text), ``pii`` (70). Cheap, decisive checks run first, so an oversized message is refused before
any pattern scans it. Guards without a "raw" note scan the augmented text, so a recalled memory
entry can block as well.
"""

from __future__ import annotations

import re

from claw_memory.guards.base import Guard, Sees
from claw_memory.guards.code import CodeInjectionGuard, SqlGuard
from claw_memory.guards.confusables import INVISIBLE_CHARS
from claw_memory.guards.phrases import PromptInjectionGuard, RoleSwitchGuard
from claw_memory.guards.pii import PiiGuard

__all__ = ["LengthGuard", "UnicodeGuard", "default_guards"]


class LengthGuard:
    """Refuses messages longer than ``max_chars`` characters, before any other guard works."""

    def __init__(self, max_chars: int = 40_000, *, priority: int = 10, sees: Sees = "raw") -> None:
        if max_chars < 1:
            raise ValueError("max_chars must be at least 1")
        self.name = "length"
        self.priority = priority
        self.sees: Sees = sees
        self.max_chars = max_chars

    def scan(self, text: str) -> str | None:
        """Block when the text is over the limit."""
        if len(text) > self.max_chars:
            return (
                f"message is too long ({len(text):,} characters; the limit is {self.max_chars:,})"
            )
        return None


# --- hidden Unicode ---------------------------------------------------------------------------

_BIDI_RE = re.compile("[\u202a-\u202e\u2066-\u2069]")
_SEPARATOR_RE = re.compile("[\u2028\u2029]")
# A subdivision flag (e.g. England) is U+1F3F4, tag letters/digits, then U+E007F CANCEL TAG;
# every other use of tag characters hides text.
_FLAG_TAGS_RE = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,7}\U000e007f")
_TAG_RE = re.compile("[\U000e0000-\U000e007f]")
_VARIATION_RUN_RE = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u180e\u2061\u2062\u2063\u2064"
# Zero-width characters separate words in Thai or join letters in Persian and Indic scripts, so
# only those between Latin, Greek or Cyrillic letters or digits are hiding something.
_LETTER = "[0-9A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]"
_IN_WORD_RE = re.compile(f"(?<={_LETTER})[{_ZERO_WIDTH}]+(?={_LETTER})")
_VISIBLE_RE = re.compile(f"[^\\s{INVISIBLE_CHARS}]")
# Every character any check below looks for; text without one is settled in a single pass.
_SUSPECT_RE = re.compile(
    f"[\u202a-\u202e\u2066-\u2069\u2028\u2029{_ZERO_WIDTH}"
    "\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)


class UnicodeGuard:
    """Refuses text that hides content from a human reader: bidi overrides, tag characters,
    zero-width characters inside words, stray line/paragraph separators, or nothing visible.
    """

    def __init__(self, *, priority: int = 20, sees: Sees = "augmented") -> None:
        self.name = "unicode"
        self.priority = priority
        self.sees: Sees = sees

    def scan(self, text: str) -> str | None:
        """The first kind of hidden content found, else ``None``."""
        if text.isascii():
            return None
        if not _SUSPECT_RE.search(text):
            # Nothing below can match; only an all-invisible message is left to rule out.
            if text.strip() and not _VISIBLE_RE.search(text):
                return "contains only invisible characters"
            return None
        if _BIDI_RE.search(text):
            return "contains bidirectional control characters"
        if _TAG_RE.search(_FLAG_TAGS_RE.sub("", text)):
            return "contains invisible tag characters"
        if _VARIATION_RUN_RE.search(text):
            return "contains a run of variation selectors"
        if text.strip() and not _VISIBLE_RE.search(text):
            return "contains only invisible characters"
        if _SEPARATOR_RE.search(text):
            return "contains a hidden line or paragraph separator (U+2028/U+2029)"
        if _IN_WORD_RE.search(text):
            return "contains zero-width characters inside words"
        return None


def default_guards(*, max_chars: int = 40_000) -> list[Guard]:
    """A fresh list of the default guards (new objects each call), in the order they run."""
    return [
        LengthGuard(max_chars),
        UnicodeGuard(),
        PromptInjectionGuard(),
        RoleSwitchGuard(),
        CodeInjectionGuard(),
        SqlGuard(),
        PiiGuard(),
    ]
