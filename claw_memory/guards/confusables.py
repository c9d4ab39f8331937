"""Fold look-alike text to plain lowercase Latin so phrase guards cannot be dodged by spelling.

"ignοre previous instructiοns" written with Greek omicrons, "ｉｇｎｏｒｅ" in fullwidth letters,
"ɪɢɴᴏʀᴇ" in small capitals or "ig\u200bnore" with a zero-width space all fold to "ignore".

The table is a small hand-picked subset of the Unicode confusables data (Unicode Technical
Standard #39, ``confusables.txt``): the Cyrillic, Greek, Armenian, Cherokee and Latin
small-capital letters that render like a Latin letter in common fonts, plus typographic quotes
and dashes. It is deliberately one-way (to Latin only) and leaves digits alone, so folding
cannot turn ordinary words into numbers. Compatibility normalisation (NFKD, the same mappings as
NFKC) covers fullwidth, mathematical, circled and superscript forms; combining accents are then
dropped, so "ïgnörë" folds too.

The folded text is for matching only; it is never shown to anyone.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["INVISIBLE_CHARS", "fold", "fold_variants"]

#: Characters that render as nothing: zero-width spaces and joiners, the word joiner, the BOM,
#: the soft hyphen, invisible operators, Hangul fillers, bidi controls and variation selectors.
INVISIBLE_CHARS = (
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f"
    "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f"
    "\u3164\ufe00\ufe01\ufe02\ufe03\ufe04\ufe05\ufe06\ufe07\ufe08\ufe09\ufe0a\ufe0b\ufe0c"
    "\ufe0d\ufe0e\ufe0f\ufeff\uffa0"
)

# Tag characters (U+E0000..U+E007F) and the variation selectors supplement (U+E0100..U+E01EF).
_INVISIBLE_RE = re.compile(
    "[" + re.escape(INVISIBLE_CHARS) + "\U000e0000-\U000e007f\U000e0100-\U000e01ef]+"
)
_COMBINING_RE = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")

# look-alike -> Latin. Each group is "source characters", "targets", aligned one to one.
_PAIRS = (
    # Cyrillic capitals and small letters
    ("АВЕЅІЈКМНОРСТХУҮԌԚԜԀӀ", "abesijkmhopctxyygqwdl"),
    ("аеѕіјорсхуүһԁԛԝӏɡ", "aesijopcxyyhdqwlg"),
    # Greek capitals and small letters
    ("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹϺ", "abezhikmnoptyxcm"),
    ("αικνορυχϲϳ", "aikvopuxcj"),
    # Armenian
    ("ՕՍհոսօցզ", "ouhnuogq"),
    # Cherokee capitals
    ("ᎪᏴᏟᎬᎻᎫᏦᏞᎷᏢᏚᎢᏙᏔᏃ", "abcehjklmpstvwz"),
    # Latin small capitals and other look-alikes
    ("ᴀʙᴄᴅᴇɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢıȷɑɩ", "abcdeghijklmnoprstuvwyzijai"),
    # typographic quotes and dashes
    ("‘’‚‛′ʼ", "'" * 6),
    ("“”„‟″", '"' * 5),
    ("‐‑‒–—―−⁃", "-" * 8),
)


def _build_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for sources, targets in _PAIRS:
        if len(sources) != len(targets):  # pragma: no cover - guards the table itself
            raise AssertionError(f"misaligned confusables group: {sources!r}")
        for src, dst in zip(sources, targets, strict=True):
            table[ord(src)] = dst
    return table


_TABLE = _build_table()


def fold(text: str, *, invisible: str = "") -> str:
    """Return ``text`` folded for matching: compatibility-normalised, look-alikes mapped to
    Latin, accents and invisible characters removed (or replaced by ``invisible``), lowercased.

    Plain ASCII text only needs lowercasing, so the common case costs one pass.
    """
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKD", text)
    text = _COMBINING_RE.sub("", text)
    text = _INVISIBLE_RE.sub(invisible, text)
    return text.translate(_TABLE).lower()


# The last non-ASCII text folded and its variants. Every phrase guard of a check scans the same
# text, so this one entry saves re-normalising it per guard; it holds one message at most.
_last: tuple[str, tuple[str, ...]] | None = None


def fold_variants(text: str) -> tuple[str, ...]:
    """The folded forms worth scanning: one, or two when invisible characters were present.

    An invisible character may hide inside a word ("ig\u200bnore") or stand in for a space
    ("ignore\u200bprevious"), so both readings are returned in that case.
    """
    global _last
    if text.isascii():
        return (text.lower(),)
    cached = _last
    if cached is not None and cached[0] == text:
        return cached[1]
    folded = fold(text)
    variants = (folded, fold(text, invisible=" ")) if _INVISIBLE_RE.search(text) else (folded,)
    _last = (text, variants)
    return variants
