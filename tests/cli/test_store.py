"""The store commands, run through ``main()`` as the console script runs them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from claw_memory.cli import main
from tests.cli._process import claw_command


@dataclass
class Outcome:
    code: int
    out: str
    err: str


class Cli:
    """Runs ``claw-memory`` in process against one FileMemory directory."""

    def __init__(self, capsys: pytest.CaptureFixture[str], store: Path) -> None:
        self.capsys = capsys
        self.url = f"file://{store}"

    def __call__(self, *args: str, memory: str | None = None) -> Outcome:
        self.capsys.readouterr()
        code = main([*args, "--memory", memory or self.url])
        captured = self.capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    def bare(self, *args: str) -> Outcome:
        self.capsys.readouterr()
        code = main(list(args))
        captured = self.capsys.readouterr()
        return Outcome(code, captured.out, captured.err)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("CLAW_MEMORY_URL", raising=False)
    monkeypatch.delenv("CLAW_MEMORY_DEBUG", raising=False)
    return Cli(capsys, tmp_path / "store")


def test_set_parses_json_and_falls_back_to_text(cli: Cli) -> None:
    assert cli("set", "n", "42").code == 0
    assert cli("set", "obj", '{"a": [1, 2.5, null]}').code == 0
    assert cli("set", "words", "hello world").code == 0
    assert cli("set", "forced", "42", "--text").code == 0
    assert cli("get", "n").out == "42\n"
    assert json.loads(cli("get", "obj").out) == {"a": [1, 2.5, None]}
    assert cli("get", "words").out == '"hello world"\n'
    assert cli("get", "words", "--raw").out == "hello world\n"
    assert cli("get", "forced").out == '"42"\n'


def test_set_reads_stdin_for_a_dash(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('["from", "stdin"]\n'))
    assert cli("set", "piped", "-").code == 0
    assert json.loads(cli("get", "piped").out) == ["from", "stdin"]


def test_get_of_a_missing_key_fails_with_one_line(cli: Cli) -> None:
    result = cli("get", "absent", "-n", "other")
    assert result.code == 1
    assert result.out == ""
    assert result.err == "claw-memory: error: no entry 'absent' in namespace 'other'\n"


def test_a_stored_null_is_found(cli: Cli) -> None:
    assert cli("set", "nothing", "null").code == 0
    assert cli("get", "nothing") == Outcome(0, "null\n", "")


def test_usage_errors_exit_2_with_one_line(cli: Cli) -> None:
    bad_json = cli("set", "k", "{oops", "--json")
    assert bad_json.code == 2
    assert bad_json.err.count("\n") == 1
    assert "not valid JSON" in bad_json.err
    bad_namespace = cli("get", "k", "-n", "a/b")
    assert bad_namespace.code == 2
    assert "namespace must not contain '/'" in bad_namespace.err
    assert cli("set", "k", "v", "--ttl", "-1").code == 2
    missing = cli.bare("get")
    assert missing.code == 2
    assert missing.err.startswith("claw-memory: error: Missing argument")
    assert "see 'claw-memory get --help'" in missing.err
    assert cli.bare("no-such-command").code == 2
    scheme = cli("ls", memory="ftp://user:hunter2@host/x")
    assert scheme.code == 2
    assert "hunter2" not in scheme.err
    assert "Traceback" not in scheme.err


def test_every_command_has_help(cli: Cli) -> None:
    for command in ("chat", "get", "set", "forget", "flush", "ls", "search", "export", "import"):
        result = cli.bare(command, "--help")
        assert result.code == 0, command
        assert "Usage: claw-memory " + command in result.out
    top = cli.bare()
    assert top.code == 0
    assert "chat" in top.out


def test_forget_removes_and_tolerates_absent_keys(cli: Cli) -> None:
    cli("set", "a", "1")
    assert cli("forget", "a").code == 0
    assert cli("forget", "a").code == 0
    assert cli("get", "a").code == 1


def test_flush_asks_first_and_empties_only_its_namespace(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("set", "a", "1", "-n", "one")
    cli("set", "b", "2", "-n", "two")
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    declined = cli("flush", "-n", "one")
    assert declined.code == 1
    assert "aborted" in declined.err
    assert cli("get", "a", "-n", "one").code == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    assert cli("flush", "-n", "one").code == 0
    assert cli("get", "a", "-n", "one").code == 1
    assert cli("flush", "-n", "two", "--yes").code == 0
    assert cli("get", "b", "-n", "two").code == 1


def test_ls_shows_keys_sizes_and_expiry(cli: Cli) -> None:
    cli("set", "forever", '"x"')
    before = time.time()
    cli("set", "brief", "[1,2,3]", "--ttl", "300")
    after = time.time()
    table = cli("ls")
    assert table.code == 0
    assert "namespace 'default': 2 entries" in table.out
    lines = [line for line in table.out.splitlines() if "forever" in line or "brief" in line]
    assert lines[0].split() == ["│", "forever", "│", "3", "B", "│", "never", "│"]
    assert lines[1].split()[:8] == ["│", "brief", "│", "7", "B", "│", "in", "5m"]
    rows = [json.loads(line) for line in cli("ls", "--json").out.splitlines()]
    assert [row["key"] for row in rows] == ["forever", "brief"]
    assert rows[0]["expires_at"] is None
    assert before + 300 - 0.01 <= rows[1]["expires_at"] <= after + 300 + 0.01


def test_search_ranks_hits_with_scores(cli: Cli) -> None:
    cli("set", "tier", "gold tier customer")
    cli("set", "rule", "gold customer discount is 10 percent")
    cli("set", "lang", "French language preferred")
    hits = [json.loads(line) for line in
            cli("search", "what discount does a gold customer get", "--json").out.splitlines()]
    assert [(hit["key"], hit["score"]) for hit in hits] == [("rule", 3.0), ("tier", 2.0)]
    table = cli("search", "gold customer", "--limit", "1")
    assert table.code == 0
    assert "1 hit in namespace 'default'" in table.out
    assert "rule" in table.out
    assert "tier" not in table.out


def test_memory_url_comes_from_the_environment(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAW_MEMORY_URL", f"sqlite+aiosqlite:///{tmp_path / 'env.db'}")
    assert cli.bare("set", "k", "from env").code == 0
    assert cli.bare("get", "k", "--raw").out == "from env\n"
    assert (tmp_path / "env.db").exists()


def test_default_memory_is_the_file_store_in_the_working_directory(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.bare("set", "k", "v").code == 0
    assert (tmp_path / "storage" / "phpclaw" / "memory").is_dir()


def _script() -> list[str]:
    program, prefix = claw_command()
    return [program, *prefix]


def test_an_unreachable_backend_is_one_line_without_password_unless_debug(tmp_path: Path) -> None:
    url = "postgresql+asyncpg://claw:hunter2@127.0.0.1:9/nowhere"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAW_")}
    quiet = subprocess.run([*_script(), "get", "k", "--memory", url], capture_output=True,
                           text=True, cwd=tmp_path, env=env, timeout=60, check=False)
    assert quiet.returncode == 1
    assert quiet.stderr.count("\n") == 1, quiet.stderr
    assert quiet.stderr.startswith("claw-memory: error: sql memory could not")
    assert "hunter2" not in quiet.stderr + quiet.stdout
    loud = subprocess.run([*_script(), "--debug", "get", "k", "--memory", url],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60,
                          check=False)
    assert loud.returncode == 1
    assert "Traceback" in loud.stderr
    assert "hunter2" not in loud.stderr + loud.stdout


def test_urls_are_shown_without_their_secrets() -> None:
    from claw_memory.cli._common import describe_memory, redact_url, scrub

    assert redact_url("redis://:s3cret-pw@cache:6379/2") == "redis://:***@cache:6379/2"
    assert (redact_url("postgresql+asyncpg://app:pw-123@db/main?sslmode=require")
            == "postgresql+asyncpg://app:***@db/main?sslmode=require")
    assert redact_url("rediss://cache:6380/0?password=qwerty&db=1") == (
        "rediss://cache:6380/0?password=***&db=1"
    )
    # Every password seen is masked in error text from then on.
    assert scrub("login failed for pw-123 and s3cret-pw") == "login failed for *** and ***"
    assert describe_memory("file:relative/dir") == (Path.cwd() / "relative" / "dir").as_uri()
    assert describe_memory("array:") == "array:"
