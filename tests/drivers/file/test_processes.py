"""Several processes writing one namespace at once: no write and no increment is lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from claw_memory.drivers.file import FileMemory
from tests.drivers.file._spawn import spawn
from tests.drivers.file._worker import NAMESPACE

PROCESSES = 4
SETS = 500
INCREMENTS = 200


@pytest.mark.slow
def test_four_processes_lose_no_set_and_no_increment(tmp_path: Path) -> None:
    workers = [
        spawn("hammer", str(tmp_path), str(w), str(SETS), str(INCREMENTS), stdin=True)
        for w in range(PROCESSES)
    ]
    try:
        for worker in workers:  # all imported and constructed: start them together
            assert worker.stdout is not None
            assert worker.stdout.readline() == "ready\n"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.close()
        for worker in workers:
            worker.wait(timeout=240)  # each prints one short line: no pipe can fill up
        outputs = [worker.stdout.read() for worker in workers if worker.stdout is not None]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    assert [w.returncode for w in workers] == [0] * PROCESSES
    assert outputs == ["done\n"] * PROCESSES

    async def check() -> None:
        async with FileMemory(tmp_path) as memory:
            everything = await memory.all(NAMESPACE)
        assert everything.pop("counter") == PROCESSES * INCREMENTS
        assert len(everything) == PROCESSES * SETS
        for w in range(PROCESSES):
            mine = [key for key in everything if key.startswith(f"p{w}-")]
            # The journal's order is the order: each process's keys oldest first.
            assert mine == [f"p{w}-{i:04d}" for i in range(SETS)]
            assert all(everything[key] == int(key[-4:]) for key in mine)

    asyncio.run(check())
