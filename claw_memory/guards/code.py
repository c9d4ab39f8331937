"""Code guards: code-execution payloads (any text) and destructive SQL (the user's own words).

``code_injection`` looks for things that only make sense as an attack on a tool behind the model:
Python ``eval``/``exec``/``__import__``, shell calls, unsafe deserialisation, template injection
(``{{ ''.__class__ }}``, ``{% ... %}``) and classic SQL-injection fragments. Plain words pass:
"evaluate", "executive", "the subprocess of learning", "I'm {{happy}}".

``sql`` refuses statements that destroy data (DROP, TRUNCATE, DELETE FROM, ALTER ... DROP) unless
the sentence is a question about them ("What does DROP TABLE do?").
"""

from __future__ import annotations

import re

from claw_memory.guards.base import PatternGuard, Rule, Sees, any_word

__all__ = ["CodeInjectionGuard", "SqlGuard"]

_DUNDER = "__(?:class|globals|subclasses|builtins|mro|bases?|init|import|getattribute|reduce)__"
_EVAL = any_word("eval", "exec")

_CODE_RULES = (
    Rule.of(r"__import__\s*\(|__builtins__", "Python builtins access", needles=("__",)),
    Rule.of(
        # exec(x) always; "exec (" with a space only before code-looking arguments, so that
        # "the exec (executive) team" passes.
        rf"{_EVAL}\(|{_EVAL}\s+\(\s*(?:[\"'`]|__|compile\b|base64|open\b|input\b)",
        "eval/exec call",
        needles=("eval", "exec"),
    ),
    Rule.of(
        rf"{any_word('os')}\s*\.\s*(?:system|popen|exec\w*|spawn\w*)\s*\(",
        "shell command call",
        needles=("os",),
    ),
    Rule.of(rf"{any_word('subprocess')}\.[a-z_]", "subprocess call", needles=("subprocess.",)),
    Rule.of(
        rf"{any_word('compile')}\s*\([^)\n]{{0,300}}[\"']exec[\"']",
        "compile(..., 'exec') call",
        needles=("compile",),
    ),
    Rule.of(
        rf"{any_word('pickle', 'cpickle', 'dill', 'marshal')}\s*\.\s*loads?\s*\(",
        "unsafe deserialisation call",
        needles=("pickle", "dill", "marshal"),
    ),
    Rule.of(
        rf"\{{\{{[^{{}}]{{0,300}}?(?:{_DUNDER}|\|\s*attr\s*\()",
        "template injection (dunder access)",
        needles=("{{",),
    ),
    Rule.of(r"\{%-?\s*[a-z_]+\b[^%\n]{0,300}?%\}", "template statement tag", needles=("{%",)),
    Rule.of(r"\$\{\s*jndi\s*:", "JNDI lookup injection", needles=("jndi",)),
    Rule.of(
        r"[\"']\s*\)?\s*or\s+[\"']?(?P<operand>\w{1,20})[\"']?\s*=\s*[\"']?(?P=operand)\b"
        r"|[\"']\s*\)?\s*or\s*[\"']{2}\s*=\s*[\"']",
        "SQL injection (always-true condition)",
        needles=("=",),
    ),
    Rule.of(
        r"[\"']\s*\)?\s*;\s*(?:--|#|/\*|(?:drop|delete|insert|update|shutdown|truncate|exec)\b)",
        "SQL injection (statement break-out)",
        needles=(";",),
    ),
    Rule.of(
        rf"{any_word('union')}(?:\s+|/\*[^*]{{0,50}}\*/)+"
        r"(?:(?:all|distinct)(?:\s+|/\*[^*]{0,50}\*/)+)?select\b",
        "SQL injection (UNION SELECT)",
        needles=("union",),
    ),
)


class CodeInjectionGuard(PatternGuard):
    """Refuses code-execution payloads: eval/exec, shell calls, template and SQL injection."""

    def __init__(self, *, priority: int = 50, sees: Sees = "augmented") -> None:
        super().__init__("code_injection", _CODE_RULES, priority=priority, sees=sees)


# --- destructive SQL --------------------------------------------------------------------------

_QUESTION_WORDS = frozenset(
    str.split(
        "what how why when where which who whom whose should can could would will is are was"
        " were does do did may might shall explain"
    )
)
_SENTENCE_END_RE = re.compile(r"[.!?](?=\s|$)|\n")
_FIRST_WORD_RE = re.compile(r"[a-z']+")


def _not_a_question(text: str, match: re.Match[str]) -> bool:
    """True unless the sentence holding ``match`` ends with '?' or opens with a question word."""
    start = 0
    for end in _SENTENCE_END_RE.finditer(text, 0, match.start()):
        start = end.end()
    stop = _SENTENCE_END_RE.search(text, match.end())
    sentence = text[start : stop.end() if stop else len(text)].strip()
    if sentence.endswith("?"):
        return False
    first = _FIRST_WORD_RE.search(sentence)
    return not (first and first.group() in _QUESTION_WORDS)


_IDENT = r"[\w`\"\[\].]+"
_SQL_RULES = (
    Rule.of(
        rf"{any_word('drop')}\s+(?:table|database|schema)\b(?!\s+tennis\b)",
        "destructive SQL (DROP)",
        _not_a_question,
        needles=("drop",),
    ),
    Rule.of(
        rf"{any_word('truncate')}\s+table\b",
        "destructive SQL (TRUNCATE)",
        _not_a_question,
        needles=("truncate",),
    ),
    Rule.of(
        rf"{any_word('delete')}\s+from\s+{_IDENT}(?=\s*(?:;|\n|$|--|\bwhere\b))",
        "destructive SQL (DELETE FROM)",
        _not_a_question,
        needles=("delete",),
    ),
    Rule.of(
        rf"{any_word('alter')}\s+table\s+{_IDENT}\s+drop\b",
        "destructive SQL (ALTER TABLE ... DROP)",
        _not_a_question,
        needles=("alter",),
    ),
)


class SqlGuard(PatternGuard):
    """Refuses destructive SQL statements; asking about them ("what does DROP TABLE do?") passes."""

    def __init__(self, *, priority: int = 60, sees: Sees = "raw") -> None:
        super().__init__("sql", _SQL_RULES, priority=priority, sees=sees)
