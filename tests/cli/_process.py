"""How the tests start the real ``claw-memory`` console script."""

from __future__ import annotations

import sys
from pathlib import Path

#: Seconds any wait on a child process may take before the test fails.
TIMEOUT = 30


def claw_command() -> tuple[str, list[str]]:
    """The program and leading arguments that run ``claw-memory`` in this environment."""
    script = Path(sys.executable).with_name("claw-memory")
    if script.exists():
        return str(script), []
    return sys.executable, ["-m", "claw_memory.cli"]
