"""The personal-data guard: e-mail addresses, card numbers, phone numbers and national ids.

Numbers are confirmed before they block, to keep false alarms rare: card numbers must pass the
Luhn check and start like a real card (2-6), IBANs must pass their mod-97 check, SSNs skip the
area numbers never issued, and an unformatted run of digits only counts as a phone number next
to a word such as "phone" or "call". Reasons name the kind of data, never the data.
"""

from __future__ import annotations

import re

from claw_memory.guards.base import PatternGuard, Rule, Sees

__all__ = ["PiiGuard", "iban_ok", "luhn_ok"]


def luhn_ok(digits: str) -> bool:
    """True when the digit string passes the Luhn (mod 10) checksum."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_ok(iban: str) -> bool:
    """True when ``iban`` (no spaces) has a plausible length and passes the ISO 13616 check."""
    if not 15 <= len(iban) <= 34 or not iban.isalnum() or not iban.isascii():
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def _groups(text: str) -> list[str]:
    return [group for group in re.split(r"[ -]", text) if group]


def _card(text: str, match: re.Match[str]) -> bool:
    # A card written among other numbers may have swallowed a neighbour group: also try the
    # leading groups alone.
    groups = _groups(match.group())
    for count in range(len(groups), 0, -1):
        digits = "".join(groups[:count])
        if len(digits) < 13:
            break
        if len(digits) <= 19 and digits[0] in "23456" and luhn_ok(digits):
            return True
    return False


def _iban(text: str, match: re.Match[str]) -> bool:
    # The match starts at the check digits; the country code is the two letters before.
    groups = (text[match.start() - 2 : match.start()] + match.group()).split(" ")
    return any(iban_ok("".join(groups[:count])) for count in range(len(groups), 0, -1))


_PHONE_WORDS = re.compile(
    r"\b(?:phone|tel|telephone|call|cell|mobile|whatsapp|sms|text\s+me|ring\s+me|fax|reach\s+me)\b"
)
_SEPARATED = re.compile(r"[ .()-]")


_NOT_BEFORE_NUMBER = frozenset("+.,/-_")


def _phone(text: str, match: re.Match[str]) -> bool:
    start = match.start()
    if start and (text[start - 1].isalnum() or text[start - 1] in _NOT_BEFORE_NUMBER):
        return False  # the tail of a longer number or word
    digits = re.sub(r"\D", "", match.group())
    if match.group().startswith("+"):
        return 8 <= len(digits) <= 15
    low, high = (11, 15) if digits.startswith("00") else (10, 12)
    if not low <= len(digits) <= high:
        return False
    if _SEPARATED.search(match.group()):
        return True
    return bool(_PHONE_WORDS.search(text, max(0, start - 40), start))


def _ssn(text: str, match: re.Match[str]) -> bool:
    area, group, serial = match.group().split("-")
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


_NI_FIRST = frozenset("abceghjklmnoprstwxyz")
_NI_SECOND = frozenset("abceghjklmnprstwxyz")
_NI_NEVER = frozenset({"bg", "gb", "kn", "nk", "nt", "tn", "zz"})


def _national_insurance(text: str, match: re.Match[str]) -> bool:
    prefix = text[max(0, match.start() - 3) : match.start()].rstrip(" ")[-2:]
    return (
        len(prefix) == 2
        and prefix[0] in _NI_FIRST
        and prefix[1] in _NI_SECOND
        and prefix not in _NI_NEVER
    )


# Patterns use ASCII classes ((?a)): digits are counted and checksummed as ASCII digits, and
# folding has already turned fullwidth digits into ASCII ones.
# Each pattern opens with a literal or a small character class and checks what precedes it in
# a lookbehind placed after that first character: a leading assertion would make the engine
# try every position of the text.
_NUMBER_END = r"(?![\w-]|\.\d)"
# Candidate spans for the number rules: one pass finds every run of 8+ digits and separators,
# and the detailed patterns then only look inside those.
_NUMBER_SPAN = re.compile(r"(?a)[+(]?\d[\d ().-]{6,}\d")

_PII_RULES = (
    Rule.of(
        r"(?a)@(?<=[\w.%+-]@)[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){0,10}\.[a-z]{2,24}(?![\w-])",
        "contains an email address",
        needles=("@",),
    ),
    Rule.of(
        r"(?a)\d(?<![\d.,]\d)(?:[ -]?\d){12,18}(?!\d)",
        "contains a payment card number",
        _card,
        min_digits=13,
        within=_NUMBER_SPAN,
    ),
    Rule.of(
        r"(?a)\d(?<![\d-]\d)\d\d-\d\d-\d{4}(?![\d-])",
        "contains a US social security number",
        _ssn,
        min_digits=9,
        within=_NUMBER_SPAN,
    ),
    Rule.of(
        r"(?a)\d(?:(?<=\b[a-z]{2}\d)|(?<=\b[a-z]{2} \d))\d ?\d\d ?\d\d ?[a-d]\b",
        "contains a UK national insurance number",
        _national_insurance,
        min_digits=6,
    ),
    Rule.of(
        r"(?a)\d\d(?<=\b[a-z]{2}\d\d)(?: ?[a-z0-9]{4}){2,7}(?: ?[a-z0-9]{1,4})?\b",
        "contains a bank account number (IBAN)",
        _iban,
        min_digits=4,
    ),
    Rule.of(
        rf"(?a)\+(?<![\w+]\+)[1-9](?:[ .()-]{{0,2}}\d){{7,14}}{_NUMBER_END}",
        "contains a phone number",
        _phone,
        needles=("+",),
        min_digits=8,
        within=_NUMBER_SPAN,
    ),
    Rule.of(
        rf"(?a)(?:1[ .-]?)?(?:\([2-9]\d{{2}}\) ?|[2-9]\d{{2}}[ .-]?)\d{{3}}[ .-]?\d{{4}}"
        rf"{_NUMBER_END}",
        "contains a phone number",
        _phone,
        min_digits=10,
        within=_NUMBER_SPAN,
    ),
    Rule.of(
        rf"(?a)(?:\(0\d{{1,4}}\)|0\d{{1,4}})(?:[ .-]?\d{{2,4}}){{2,4}}{_NUMBER_END}",
        "contains a phone number",
        _phone,
        min_digits=10,
        within=_NUMBER_SPAN,
    ),
)


class PiiGuard(PatternGuard):
    """Refuses messages carrying personal data, so it is neither sent to the model nor stored."""

    def __init__(self, *, priority: int = 70, sees: Sees = "augmented") -> None:
        super().__init__("pii", _PII_RULES, priority=priority, sees=sees)
