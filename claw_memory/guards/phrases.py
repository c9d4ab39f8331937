"""Phrase guards: prompt injection and role switch.

Both match folded text (see :mod:`claw_memory.guards.confusables`), so patterns are lowercase
ASCII and words may be separated by any run of spaces or punctuation (``SEP``). They aim at
ordinary chat passing untouched ("please ignore the noise outside", "act as a team"), so some
rules confirm a match by the words just before it: "pretend to be" blocks when it is said to
the assistant ("Pretend to be my lawyer", "I want you to pretend to be...") but not in "my kids
pretend to be dinosaurs".
"""

from __future__ import annotations

import re

from claw_memory.guards.base import SEP, PatternGuard, Rule, Sees, any_word

__all__ = ["PromptInjectionGuard", "RoleSwitchGuard"]

_S = SEP
_E = r"(?![^\W_])"  # end of a word; an underscore counts as a separator

# --- prompt injection -------------------------------------------------------------------------

_EARLIER = "(?:previous|prior|above|preceding|earlier|former|original|initial|system|old|past)"
_ORDERS = (
    "(?:instructions?|prompts?|rules|directions|directives|guidelines|commands|programming"
    "|guardrails|constraints|training|restrictions|filters)"
)
_IGNORE = ("ignore", "disregard", "forget", "skip", "override", "bypass", "discard", "abandon")
_REVEAL = (
    "reveal", "print", "show", "display", "output", "repeat", "leak", "dump", "expose",
    "disclose", "recite",
)  # fmt: skip
_DEVICES = (
    "(?:iphones?|ipads?|ipods?|phones?|devices?|consoles?|kindles?|switch|ps[2-5]|xbox|"
    "androids?|tablets?|routers?|firesticks?|apple tv)"
)

_INJECTION_RULES = (
    Rule.of(
        rf"{any_word(*_IGNORE)}{_S}(?:(?:all|any|every|of|the|your|my|these|those){_S}){{0,3}}"
        rf"{_EARLIER}{_S}(?:\w+{_S})?{_ORDERS}{_E}",
        "asks to ignore previous instructions",
        needles=_IGNORE,
    ),
    Rule.of(
        rf"{any_word(*_IGNORE)}{_S}(?:(?:all|any|of|the){_S}){{0,2}}your{_S}(?:\w+{_S})?"
        rf"{_ORDERS}{_E}",
        "asks to ignore the assistant's instructions",
        needles=_IGNORE,
    ),
    Rule.of(
        rf"{any_word('ignore')}{_S}(?:all|any|every){_S}(?:(?:of|the|your){_S}){{0,2}}"
        rf"{_ORDERS}{_E}",
        "asks to ignore all instructions",
        needles=("ignore",),
    ),
    Rule.of(
        rf"{any_word('disregard')}{_S}(?:(?:all|any|of){_S}){{0,2}}the{_S}"
        rf"(?:{_EARLIER}{_S})?(?:instructions?|rules){_E}",
        "asks to disregard the instructions",
        needles=("disregard",),
    ),
    Rule.of(
        rf"{any_word('ignore', 'disregard', 'forget')}{_S}(?:(?:all|of|the){_S}){{0,3}}"
        rf"(?:everything|text|words){_S}(?:above|before{_S}this){_E}",
        "asks to ignore everything above",
        needles=("ignore", "disregard", "forget"),
    ),
    Rule.of(
        rf"{any_word('system')}[\W_]*prompts?{_E}",
        "mentions the system prompt",
        needles=("prompt",),
    ),
    Rule.of(
        rf"{any_word(*_REVEAL)}{_S}(?:me{_S})?(?:all{_S})?your{_S}(?:\w+{_S}){{0,2}}"
        r"(?:instructions|prompt|rules|guidelines|directives|configuration|programming)(?![^\W_])",
        "asks to reveal the assistant's instructions",
        needles=("your",),
    ),
    Rule.of(
        rf"{any_word(*_REVEAL)}{_S}(?:me{_S})?the{_S}(?:(?:full|entire|exact|complete){_S})?"
        rf"(?:hidden|secret|internal|initial|original|system|developer|pre-?prompt){_S}"
        r"(?:instructions|prompt|message|rules)(?![^\W_])",
        "asks to reveal hidden instructions",
        needles=("instructions", "prompt", "message", "rules"),
    ),
    Rule.of(
        rf"{any_word(*_REVEAL)}{_S}(?:(?:all|everything|the|text|words|lines|content){_S})"
        r"{1,3}above(?![^\W_])",
        "asks to repeat the text above",
        needles=("above",),
    ),
    Rule.of(
        rf"jailbr(?<!\wjailbr)(?:eak[a-z]*|oken){_E}"
        rf"(?!{_S}(?:(?:my|an?|the|your|this|old){_S})?{_DEVICES}{_E})",
        "jailbreak attempt",
        needles=("jailbr",),
    ),
    Rule.of(
        rf"{any_word('developer')}{_S}mode{_S}(?:enabled|activated|output|response){_E}"
        rf"|{any_word('you', 'your')}{_S}(?:(?:are|re|now|in|a|the|running|using|with){_S})"
        rf"{{0,3}}developer{_S}mode{_E}"
        rf"|{any_word('simulate', 'emulate', 'enter', 'activate', 'enable')}{_S}"
        rf"(?:(?:the|a){_S})?developer{_S}mode{_E}(?!{_S}(?:on|in|for){_E})",
        "asks for a 'developer mode'",
        needles=("developer",),
    ),
    Rule.of(
        rf"{any_word('dan')}{_S}mode{_E}|[\"'(]do{_S}anything{_S}now{_E}"
        rf"|{any_word('do')}{_S}anything{_S}now[\"')]"
        rf"|{any_word('dan')}{_E}[^\n]{{0,80}}\bdo{_S}anything{_S}now{_E}"
        rf"|{any_word('do')}{_S}anything{_S}now{_E}[^\n]{{0,80}}\bdan\b",
        "'do anything now' (DAN) jailbreak",
        needles=("dan", "anything"),
    ),
    Rule.of(
        r"<\|(?:im_start|im_end|system|endoftext|start_header_id|end_header_id|eot_id)\|>"
        r"|<</?sys>>|\[/?inst\]",
        "contains chat-template control tokens",
        needles=("<|", "<<", "inst]"),
    ),
)


class PromptInjectionGuard(PatternGuard):
    """Refuses attempts to override, reveal or jailbreak the assistant's instructions."""

    def __init__(self, *, priority: int = 30, sees: Sees = "augmented") -> None:
        super().__init__("prompt_injection", _INJECTION_RULES, priority=priority, sees=sees)


# --- role switch ------------------------------------------------------------------------------

_YOU = any_word("you", "u")
_YOU_ARE = rf"{_YOU}{_S}(?:are|re|r){_E}"
_ADDRESSED = re.compile(
    rf"\b(?:please|pls|now|just|then|okay|ok|let{_S}s|lets|let{_S}us"
    rf"|(?:you|u)(?:{_S}(?:to|will|must|should|shall|can|could|would|now|need{_S}to|have{_S}to"
    rf"|are{_S}to|gonna|going{_S}to))*)[\W_]*$"
)
# Objects of "act as a ..." that describe cooperation or a function, not a persona.
_NOT_ROLES = frozenset(
    str.split(
        "team group unit whole family community collective single one pair couple buffer"
        " barrier bridge catalyst deterrent proxy link check counterweight filter shield"
        " reminder signal trigger substitute replacement means way channel conduit"
    )
)


def _addressed(text: str, start: int) -> bool:
    """True when the words before ``start`` make it an instruction to the assistant: it opens
    a sentence, or follows "please", "now", "let's", "you", "you will", "I want you to"...
    """
    before = text[max(0, start - 40) : start]
    head = before.rstrip(" \t\"'*_>-")
    if not head or head[-1] in ".!?:;,([\n":
        return True
    return bool(_ADDRESSED.search(before))


def _addressed_match(text: str, match: re.Match[str]) -> bool:
    return _addressed(text, match.start())


def _addressed_role(text: str, match: re.Match[str]) -> bool:
    words = {match.group("role"), match.group("role2")}
    return not (words & _NOT_ROLES) and _addressed(text, match.start())


_ROLE_RULES = (
    Rule.of(
        rf"{_YOU_ARE}{_S}now{_S}(?:an?|the|my|called|named|known{_S}as|no{_S}longer|free"
        rf"|unrestricted|unfiltered|uncensored|jailbroken|dan|evil|playing|acting"
        rf"|going{_S}to{_S}(?:be|act|play)|pretending|in{_S}(?:character|role)){_E}",
        'role switch ("you are now ...")',
        needles=("now",),
    ),
    Rule.of(
        rf"{_YOU_ARE}{_S}no{_S}longer{_S}(?:an?{_S})?(?:ai|assistant|chatbot|bound|restricted"
        rf"|limited|required|subject|chatgpt|claude|language{_S}model){_E}",
        'role switch ("you are no longer ...")',
        needles=("longer",),
    ),
    Rule.of(
        rf"{any_word('from')}{_S}now{_S}on{_S}(?:{_YOU_ARE}|{_YOU}{_S}(?:will|shall|must){_S}"
        rf"(?:be|act|behave|respond|answer|only|always|pretend|play|speak){_E}"
        rf"|act{_S}as|pretend|your{_S}(?:name|role){_E})",
        'role switch ("from now on you are ...")',
        needles=("now",),
    ),
    Rule.of(
        rf"{any_word('pretend')}{_S}(?:that{_S})?{_YOU_ARE}",
        'role switch ("pretend you are")',
        needles=("pretend",),
    ),
    Rule.of(
        rf"{any_word('pretend')}{_S}to{_S}be{_E}",
        'role switch ("pretend to be")',
        _addressed_match,
        needles=("pretend",),
    ),
    Rule.of(
        rf"{any_word('act')}{_S}as{_S}(?:if|though){_S}(?:you|u){_E}",
        'role switch ("act as if")',
        needles=("act",),
    ),
    Rule.of(
        rf"{any_word('act')}{_S}as{_S}(?:if|though){_E}",
        'role switch ("act as if")',
        _addressed_match,
        needles=("act",),
    ),
    Rule.of(
        rf"{any_word('act')}{_S}as{_S}(?:an?|my|the|your){_S}(?P<role>\w+)"
        rf"(?:{_S}(?P<role2>\w+))?",
        'role switch ("act as ...")',
        _addressed_role,
        needles=("act",),
    ),
    Rule.of(
        rf"{any_word('role')}[\W_]*play(?:ing)?{_S}as{_E}",
        'role switch ("roleplay as")',
        needles=("play",),
    ),
    Rule.of(
        rf"{_YOU}{_S}(?:will|shall|must){_S}(?:now{_S})?(?:act|behave|respond|speak|answer)"
        rf"{_S}as{_S}(?:if|though|an?|the|my|dan){_E}"
        rf"|{any_word('your')}{_S}new{_S}(?:name|role|persona|identity){_S}is{_E}",
        "role switch (new persona)",
        needles=("will", "shall", "must", "new"),
    ),
)


class RoleSwitchGuard(PatternGuard):
    """Refuses attempts to give the assistant a new persona ("you are now", "act as a ...")."""

    def __init__(self, *, priority: int = 40, sees: Sees = "augmented") -> None:
        super().__init__("role_switch", _ROLE_RULES, priority=priority, sees=sees)
