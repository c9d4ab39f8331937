"""A child process for the multi-process FileMemory tests.

``python -m tests.drivers.file._worker crash DIR ROUND``: writes until killed, printing
``set KEY`` / ``count N`` after each awaited write returns (so every printed line is an
acknowledged write).

``python -m tests.drivers.file._worker hammer DIR WORKER SETS INCREMENTS``: prints ``ready``,
waits for a line on stdin, then performs SETS sets of distinct keys and INCREMENTS
``update`` increments of one counter, interleaved, and prints ``done``.
"""

from __future__ import annotations

import asyncio
import sys

from claw_memory.drivers.file import FileMemory

NAMESPACE = "shared:ns"
COUNTER_NAMESPACE = "shared:counter"


def value_for(key: str) -> str:
    return f"value of {key} " + "padding words " * 4


def increment(current: int | None) -> int:
    return (current or 0) + 1


async def crash(directory: str, round_no: int) -> None:
    memory = FileMemory(directory, durability="fsync", compact_min_bytes=512)

    async def writer(lane: int) -> None:
        for i in range(10**9):
            key = f"r{round_no}-w{lane}-{i}"
            await memory.set(key, value_for(key), NAMESPACE)
            print("set", key, flush=True)

    async def counter() -> None:
        while True:
            count = await memory.update("counter", increment, COUNTER_NAMESPACE)
            print("count", count, flush=True)

    await asyncio.gather(writer(0), writer(1), counter())


async def hammer(directory: str, worker: int, sets: int, increments: int) -> None:
    memory = FileMemory(directory, compact_min_bytes=4096)
    print("ready", flush=True)
    sys.stdin.readline()
    every = max(1, sets // max(1, increments))
    done = 0
    for i in range(sets):
        await memory.set(f"p{worker}-{i:04d}", i, NAMESPACE)
        if i % every == 0 and done < increments:
            await memory.update("counter", increment, NAMESPACE)
            done += 1
    for _ in range(increments - done):
        await memory.update("counter", increment, NAMESPACE)
    print("done", flush=True)


def main(argv: list[str]) -> None:
    mode, directory, *rest = argv
    if mode == "crash":
        asyncio.run(crash(directory, int(rest[0])))
    else:
        asyncio.run(hammer(directory, *(int(a) for a in rest)))


if __name__ == "__main__":
    main(sys.argv[1:])
