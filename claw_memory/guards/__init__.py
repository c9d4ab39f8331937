"""Guards: checks that refuse a message before it reaches the model.

``GuardSet(default_guards())`` is what an agent runs unless told otherwise; ``remove(name)`` drops
one default (``"length"``, ``"unicode"``, ``"prompt_injection"``, ``"role_switch"``,
``"code_injection"``, ``"sql"``, ``"pii"``) and ``add`` plugs in any object with ``name``,
``priority``, ``sees`` and ``scan(text)``.
"""

from __future__ import annotations

from claw_memory.guards.base import (
    SEP,
    Guard,
    GuardBlock,
    GuardSet,
    PatternGuard,
    Rule,
    Sees,
    any_word,
)
from claw_memory.guards.code import CodeInjectionGuard, SqlGuard
from claw_memory.guards.confusables import fold
from claw_memory.guards.defaults import LengthGuard, UnicodeGuard, default_guards
from claw_memory.guards.phrases import PromptInjectionGuard, RoleSwitchGuard
from claw_memory.guards.pii import PiiGuard

__all__ = [
    "SEP",
    "CodeInjectionGuard",
    "Guard",
    "GuardBlock",
    "GuardSet",
    "LengthGuard",
    "PatternGuard",
    "PiiGuard",
    "PromptInjectionGuard",
    "RoleSwitchGuard",
    "Rule",
    "Sees",
    "SqlGuard",
    "UnicodeGuard",
    "any_word",
    "default_guards",
    "fold",
]
