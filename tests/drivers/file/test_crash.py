"""FileMemory survives SIGKILL at random moments: every acknowledged write is there."""

from __future__ import annotations

import asyncio
import os
import random
import signal
from pathlib import Path

import pytest

from claw_memory.drivers.file import FileMemory
from tests.drivers.file._spawn import spawn
from tests.drivers.file._worker import COUNTER_NAMESPACE, NAMESPACE, value_for

ROUNDS = 20


def _run_and_kill(directory: Path, round_no: int, rng: random.Random) -> list[str]:
    """Start a writer, kill it after a random number of acknowledgements, return them all."""
    child = spawn("crash", str(directory), str(round_no))
    assert child.stdout is not None
    wanted = rng.randint(1, 150)
    acknowledged: list[str] = []
    try:
        while len(acknowledged) < wanted:
            line = child.stdout.readline()
            if not line:
                break
            acknowledged.append(line)
        os.kill(child.pid, signal.SIGKILL)
        # Read the rest through the same buffered stream: communicate(timeout=...) would read
        # the raw pipe and skip what readline() had already buffered.
        child.wait(timeout=30)
        rest = child.stdout.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL, "the writer died before it was killed"
    # Lines the child printed before dying were acknowledged too.
    return acknowledged + rest.splitlines(keepends=True)


async def _verify(directory: Path, acked_keys: list[str], last_count: int) -> int:
    async with FileMemory(directory, durability="fsync") as memory:
        everything = await memory.all(NAMESPACE)
        missing = [key for key in acked_keys if everything.get(key) != value_for(key)]
        assert missing == []
        count = await memory.get("counter", COUNTER_NAMESPACE) or 0
        # An update in flight when the writer died may or may not have landed.
        assert last_count <= count <= last_count + 1
        # The recovered store takes writes again, and a fresh reader sees them.
        await memory.set("probe", count, NAMESPACE)
    async with FileMemory(directory) as reader:
        assert await reader.get("probe", NAMESPACE) == count
        assert len(await reader.all(NAMESPACE)) == len(everything) + ("probe" not in everything)
    return count


@pytest.mark.slow
def test_acknowledged_writes_survive_sigkill_at_random_moments(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    directory = tmp_path / "store"
    acked_keys: list[str] = []
    last_count = 0
    for round_no in range(ROUNDS):
        for line in _run_and_kill(directory, round_no, rng):
            if not line.endswith("\n"):
                continue  # cut short by the kill
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "set":
                acked_keys.append(rest)
            elif kind == "count":
                last_count = max(last_count, int(rest))
            else:
                pytest.fail(f"unexpected output from the writer: {line!r} (seed {seed})")
        try:
            last_count = asyncio.run(_verify(directory, acked_keys, last_count))
            assert not [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]
        except AssertionError as exc:
            raise AssertionError(f"round {round_no}, seed {seed}: {exc}") from exc
    assert len(acked_keys) >= ROUNDS
