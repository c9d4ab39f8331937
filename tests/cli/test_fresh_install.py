"""The README's first command works with the core dependencies alone.

``pip install claw-memory`` brings typer, rich, httpx, anyio and python-ulid, nothing else; the
chat and the store commands over the default FileMemory must not need an optional extra.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: Installed here for the other tests, absent on a fresh machine.
OPTIONAL = ("redis", "hiredis", "sqlalchemy", "aiosqlite", "asyncpg", "asyncmy", "fakeredis",
            "starlette", "uvicorn", "fastapi", "pexpect", "hypothesis", "pytest")

RUNNER = f"""
import sys

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Absent())
from claw_memory.cli import main
code = main(sys.argv[1:])
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({OPTIONAL!r}))
print("optional modules loaded:", loaded)
sys.exit(code)
"""


def run(args: list[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAW_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-c", RUNNER, *args], input=stdin, capture_output=True, text=True,
        cwd=cwd, env=env, timeout=60, check=False,
    )


def test_chat_runs_with_the_core_dependencies_only(tmp_path: Path) -> None:
    done = run(["chat"], tmp_path, "/remember pet my dog is called Rex\nwhat is my dog called?\n")
    assert done.returncode == 0, done.stderr
    assert "- pet: my dog is called Rex" in done.stdout
    assert "optional modules loaded: []" in done.stdout
    assert done.stderr == ""


def test_store_commands_run_with_the_core_dependencies_only(tmp_path: Path) -> None:
    assert run(["set", "k", "[1, 2]"], tmp_path).returncode == 0
    got = run(["get", "k"], tmp_path)
    assert got.stdout.startswith("[1,2]\n")
    assert "optional modules loaded: []" in got.stdout
    exported = run(["export"], tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert '{"namespace":"default","key":"k","value":[1,2],"expires_at":null}' in exported.stdout


def test_a_driver_url_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    done = run(["ls", "--memory", "redis://127.0.0.1:6379/0"], tmp_path)
    assert done.returncode == 1
    assert "pip install 'claw-memory[redis]'" in done.stderr
    assert "Traceback" not in done.stderr
    sql = run(["ls", "--memory", "sqlite+aiosqlite:///x.db"], tmp_path)
    assert sql.returncode == 1
    assert "pip install 'claw-memory[sql]'" in sql.stderr
