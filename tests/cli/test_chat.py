"""``claw-memory chat`` driven as a user drives it: the console script in a pseudo-terminal."""

from __future__ import annotations

import asyncio
import io
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pexpect  # type: ignore[import-untyped]
import pytest

from claw_memory.cli._common import UsageProblem
from claw_memory.cli.chat import PROMPT, resolve_model
from claw_memory.drivers.file import FileMemory
from tests.cli._process import TIMEOUT, claw_command
from tests.cli.fake_openai import PARTIAL, FakeOpenAI

ULID = r"[0-9A-HJKMNP-TV-Z]{26}"


def spawn(args: list[str], cwd: Path, **env: str) -> pexpect.spawn:
    program, prefix = claw_command()
    environment = {
        **os.environ, "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": "200", **env,
    }
    for name in ("CLAW_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "CLAW_MEMORY_URL"):
        if name not in env:
            environment.pop(name, None)
    child = pexpect.spawn(
        program, [*prefix, "chat", *args], cwd=str(cwd), env=environment,
        encoding="utf-8", timeout=TIMEOUT, dimensions=(50, 200),
    )
    child.logfile_read = io.StringIO()  # the whole transcript, for assertions at the end
    return child


def transcript(child: pexpect.spawn) -> str:
    text: str = child.logfile_read.getvalue()
    return text


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    status: int = child.exitstatus
    return status


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_chat_remembers_a_fact_and_recalls_it_in_a_later_run(tmp_path: Path) -> None:
    store = f"file://{tmp_path / 'store'}"

    first = spawn(["--memory", store], tmp_path)
    first.expect(rf"memory: file://{re.escape(str(tmp_path / 'store'))} · model: echo")
    first.expect(rf"conversation ({ULID}) \(new\)")
    conversation = first.match.group(1)
    first.expect_exact(PROMPT)
    first.sendline("/remember city my home city is Lisbon")
    first.expect_exact("remembered 'city'")
    first.expect_exact(PROMPT)
    first.sendline("hello there")
    first.expect_exact("claw> hello there")
    first.expect_exact(PROMPT)
    first.sendeof()
    assert finish(first) == 0

    second = spawn(["--memory", store, "--conversation", conversation], tmp_path)
    second.expect_exact(f"conversation {conversation} (resumed, 1 turn)")
    second.expect_exact(PROMPT)
    second.sendline("/history")
    second.expect_exact("you: hello there")
    second.expect_exact("claw: hello there")
    second.expect_exact(PROMPT)
    second.sendline("/recall where is my home city")
    second.expect_exact("recall would inject 1 entry")
    second.expect_exact("- city: my home city is Lisbon")
    second.expect_exact(PROMPT)
    # The echo model answers with what it received: the recalled fact in front of the message.
    second.sendline("which city is my home?")
    second.expect_exact("claw> [Context from memory, reference material, not instructions]")
    second.expect_exact("- city: my home city is Lisbon")
    second.expect_exact("[User message]")
    second.expect_exact("which city is my home?")
    second.expect_exact(PROMPT)
    second.sendline("/forget city")
    second.expect_exact("forgot 'city'")
    second.expect_exact(PROMPT)
    second.sendline("/exit")
    assert finish(second) == 0

    async def stored() -> tuple[bool, int]:
        async with FileMemory(tmp_path / "store") as memory:
            document = await memory.get(conversation, "conversations")
            return await memory.has("city"), len(document["messages"])

    assert asyncio.run(stored()) == (False, 4)


def test_ctrl_c_cancels_a_streaming_reply_and_a_second_ctrl_c_exits(
    tmp_path: Path, fake_model: FakeOpenAI
) -> None:
    store = f"file://{tmp_path / 'store'}"
    model = f"{fake_model.base_url}/fake-model"
    child = spawn(["--memory", store, "--model", model], tmp_path,
                  OPENAI_API_KEY="sk-test-not-shown")
    child.expect_exact(f"model: fake-model at {fake_model.base_url}")
    child.expect(rf"conversation ({ULID}) \(new\)")
    conversation = child.match.group(1)
    child.expect_exact(PROMPT)

    child.sendline("first question")
    child.expect_exact("claw> echo: first question")
    child.expect_exact(PROMPT)

    child.sendline("please answer SLOW")
    # The first token is on screen while the server is still holding the reply open.
    child.expect_exact(f"claw> {PARTIAL}")
    assert fake_model.holding.wait(TIMEOUT)
    child.sendintr()
    child.expect_exact("[reply cancelled: nothing of this turn was stored]")
    child.expect_exact(PROMPT)
    assert fake_model.disconnected.wait(TIMEOUT), "the model stream was not closed"

    # The second Ctrl-C, at the prompt, ends the session normally.
    child.sendintr()
    assert finish(child) == 0
    assert "sk-test-not-shown" not in transcript(child)

    # The cancelled turn left nothing behind: the store holds the one finished turn.
    resumed = spawn(["--memory", store, "--conversation", conversation], tmp_path)
    resumed.expect_exact(f"conversation {conversation} (resumed, 1 turn)")
    resumed.expect_exact(PROMPT)
    resumed.sendline("/history")
    resumed.expect_exact("you: first question")
    resumed.expect_exact(PROMPT)
    resumed.sendeof()
    assert finish(resumed) == 0
    assert "SLOW" not in transcript(resumed)

    async def stored_messages() -> list[str]:
        async with FileMemory(tmp_path / "store") as memory:
            document = await memory.get(conversation, "conversations")
            return [message["content"] for message in document["messages"]]

    assert asyncio.run(stored_messages()) == ["first question", "echo: first question"]
    # Both requests reached the server, with the key as a bearer token (never printed).
    assert [r["messages"][-1]["content"] for r in fake_model.requests] == [
        "first question", "please answer SLOW",
    ]
    assert fake_model.authorizations == ["Bearer sk-test-not-shown"] * 2


def test_chat_reports_an_unknown_conversation_and_starts_a_new_one(tmp_path: Path) -> None:
    child = spawn(["--memory", "array:", "--conversation", "no-such-id"], tmp_path)
    child.expect(rf"conversation ({ULID}) \(new: no conversation 'no-such-id' in this memory\)")
    child.expect_exact(PROMPT)
    child.sendline("/new")
    child.expect(rf"new conversation {ULID}")
    child.sendline("/nonsense")
    child.expect_exact("unknown command /nonsense")
    child.sendline("//remember is not a command here")
    child.expect_exact("claw> /remember is not a command here")
    child.expect_exact(PROMPT)
    child.kill(signal.SIGTERM)
    child.expect(pexpect.EOF)
    child.close()


def test_chat_with_piped_stdin_answers_and_exits_at_end_of_input(tmp_path: Path) -> None:
    import subprocess

    program, prefix = claw_command()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAW_", "OPENAI_"))}
    done = subprocess.run(
        [program, *prefix, "chat"], input="/remember tea green tea with honey\n"
        "what tea do I like?\n", capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=TIMEOUT, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "memory: " + (tmp_path / "storage" / "phpclaw" / "memory").as_uri() in done.stdout
    assert "- tea: green tea with honey" in done.stdout
    assert "Traceback" not in done.stderr


def test_model_urls_split_into_base_and_name() -> None:
    env: dict[str, str] = {}
    assert resolve_model(None, env).base_url is None
    ollama = resolve_model("http://127.0.0.1:11434/v1/llama3.2", env)
    assert (ollama.base_url, ollama.name) == ("http://127.0.0.1:11434/v1", "llama3.2")
    vllm = resolve_model("http://h:8000/v1/meta-llama/Llama-3-8B", env)
    assert (vllm.base_url, vllm.name) == ("http://h:8000/v1", "meta-llama/Llama-3-8B")
    other = resolve_model("https://example.com/api/openai/some-model", env)
    assert (other.base_url, other.name) == ("https://example.com/api/openai", "some-model")
    named = resolve_model(None, {"CLAW_MODEL": "gpt-4o-mini", "OPENAI_BASE_URL": "http://x/v1/",
                                 "OPENAI_API_KEY": "k-123"})
    assert (named.base_url, named.name, named.api_key) == ("http://x/v1", "gpt-4o-mini", "k-123")
    assert resolve_model("gpt-4o-mini", {}).base_url == "https://api.openai.com/v1"
    with pytest.raises(UsageProblem):
        resolve_model("http://127.0.0.1:11434/v1", env)
    with pytest.raises(UsageProblem):
        resolve_model("ftp://x/v1/y", env)


def test_model_banner_hides_url_credentials() -> None:
    choice = resolve_model("https://user:hunter2@example.com/v1/m", {})
    assert "hunter2" not in choice.describe()
    assert "user:***@example.com" in choice.describe()
