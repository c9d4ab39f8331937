"""Start ``_worker`` child processes with the repository on their import path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import claw_memory

REPO = Path(claw_memory.__file__).resolve().parent.parent


def spawn(*args: str, stdin: bool = False) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.drivers.file._worker", *args],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
