"""RedisMemory against the raw redis.asyncio client on the same server, in the same run.

Prints:

* get / set throughput of RedisMemory against raw ``GET`` / ``SET`` of the same keys and value
  size through redis-py's client as ``from_url`` builds it (goals: get >= 0.9x, set >= 0.8x);
  RedisMemory's set includes its index upkeep (recency; the words are indexed by the next
  search, whose one-off cost is the last row). RedisMemory's own client bounds each command
  with one ``asyncio.timeout`` where redis-py's default ``socket_timeout`` costs a task per
  command, and packs commands with hiredis; so two rows without a goal show it against the
  stock client with no socket timeout (unbounded calls), and RedisMemory on a stock client
  passed in;
* ``all()`` of a 1,000-key namespace in a database holding 200,000 other keys against the same
  namespace in an empty database (goal <= 1.5x: the cost follows the namespace, not the
  keyspace); this part runs on a redis-server the benchmark starts on a free port;
* ``search`` p50 over a 10,000-entry namespace (goal <= 10 ms) against fetching every value with
  ``all()`` and ranking it client-side with ``TokenOverlapScorer`` (goal >= 5x faster), checking
  both give the same hits, plus the one-off cost of the first search after 1,000 fresh sets.

    python benchmarks/bench_redis.py [--url redis://127.0.0.1:6379/0] [--rounds 7] [--quick]

Keys live under a prefix of this run and are deleted at the end; nothing else is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import secrets
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import redis.asyncio as aioredis
from _harness import (
    Results,
    human_rate,
    human_time,
    interleave,
    machine,
    median_latency,
    ratio_marker,
    table,
)
from corpus import queries, sentences

from claw_memory.drivers.redis import RedisMemory
from claw_memory.scoring import TokenOverlapScorer

KEYS = [f"key:{i}" for i in range(1000)]
MARKERS: list[str] = []  # the chart's ratios, printed after the table


async def remove_prefix(client: aioredis.Redis, prefix: str) -> None:
    batch = []
    async for name in client.scan_iter(match=prefix + "*", count=1000):
        batch.append(name)
        if len(batch) == 1000:
            await client.unlink(*batch)
            batch.clear()
    if batch:
        await client.unlink(*batch)


# -- get / set --------------------------------------------------------------------------------

async def paired_rates(
    ops: dict[str, Callable[[int], Awaitable[object]]], rounds: int, n: int, block: int = 100
) -> Results:
    """Throughput of each op per round, the ops taking turns every ``block`` calls.

    The machine is shared, so load comes and goes within a round; alternating in small blocks
    (order rotated each block) puts every op under the same load, keeping same-round ratios
    meaningful where whole-round turns would not.
    """
    names = list(ops)
    results = Results({name: [] for name in names})
    for _ in range(rounds):
        spent = dict.fromkeys(names, 0.0)
        gc.collect()
        for start in range(0, n, block):
            turn = (start // block) % len(names)
            for name in names[turn:] + names[:turn]:
                op = ops[name]
                began = time.perf_counter()
                for i in range(start, start + block):
                    await op(i)
                spent[name] += time.perf_counter() - began
        for name in names:
            results.rounds[name].append(n / spent[name])
    return results


async def bench_get_set(url: str, rounds: int, n: int) -> list[list[object]]:
    prefix = f"bench:{secrets.token_hex(4)}:"
    # The reference: redis-py's client as from_url builds it (socket_timeout=5, so redis-py
    # bounds each write with asyncio.wait_for and each read with a timeout).
    raw = aioredis.Redis.from_url(url)
    # Also shown, without a goal: the stock client with no socket timeout (calls unbounded on
    # a hung server), and RedisMemory on a stock client passed in rather than its own.
    unbounded = aioredis.Redis.from_url(url, socket_timeout=None)
    memory = RedisMemory(url=url, prefix=prefix)
    injected = RedisMemory(raw, prefix=prefix + "injected:")
    values = sentences(len(KEYS), seed=3, low=14, high=18)
    values = [v[:100].ljust(100, ".") for v in values]
    raw_keys = [f"{prefix}raw:{k}" for k in KEYS]
    try:
        for i, key in enumerate(KEYS):
            await memory.set(key, values[i])
            await injected.set(key, values[i])
            await raw.set(raw_keys[i], values[i])

        ops: dict[str, Callable[[int], Awaitable[object]]] = {
            "raw GET": lambda i: raw.get(raw_keys[i % 1000]),
            "RedisMemory.get": lambda i: memory.get(KEYS[i % 1000]),
            "raw SET": lambda i: raw.set(raw_keys[i % 1000], values[(i * 7) % 1000]),
            "RedisMemory.set": lambda i: memory.set(KEYS[i % 1000], values[(i * 7) % 1000]),
            "raw GET, no timeout": lambda i: unbounded.get(raw_keys[i % 1000]),
            "raw SET, no timeout": lambda i: unbounded.set(
                raw_keys[i % 1000], values[(i * 7) % 1000]),
            "RedisMemory(client).get": lambda i: injected.get(KEYS[i % 1000]),
            "RedisMemory(client).set": lambda i: injected.set(
                KEYS[i % 1000], values[(i * 7) % 1000]),
        }
        results = await paired_rates(ops, rounds, n)
        rows: list[list[object]] = []
        for mine, theirs, goal, chart, chart_goal in (
            ("RedisMemory.get", "raw GET", ">= 0.9x", "RedisMemory get / raw GET", "≥ 0.9"),
            ("RedisMemory.set", "raw SET", ">= 0.8x", "RedisMemory set / raw SET", "≥ 0.8"),
            ("RedisMemory.get", "raw GET, no timeout", "", "", ""),
            ("RedisMemory.set", "raw SET, no timeout", "", "", ""),
            ("RedisMemory(client).get", "raw GET", "", "", ""),
            ("RedisMemory(client).set", "raw SET", "", "", ""),
        ):
            rows.append([mine, human_rate(results.median(mine)), theirs,
                         human_rate(results.median(theirs)),
                         f"{results.ratio(mine, theirs):.2f}x", goal or "shown"])
            if chart:
                MARKERS.append(ratio_marker(chart, results.ratio(mine, theirs), chart_goal))
        return rows
    finally:
        await memory.flush()
        await injected.flush()
        await remove_prefix(raw, prefix)
        await memory.aclose()
        await unbounded.aclose()
        await raw.aclose()


# -- all() against the size of the keyspace ----------------------------------------------------

@contextlib.asynccontextmanager
async def private_server() -> AsyncIterator[int]:
    """A redis-server on a free loopback port, stopped by PID afterwards."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    directory = tempfile.mkdtemp(prefix="bench-redis-")
    process = await asyncio.create_subprocess_exec(
        "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", directory,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        client = aioredis.Redis(port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                await client.ping()
                break
            except (aioredis.ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.02)
        await client.aclose()
        yield port
    finally:
        process.terminate()
        await process.wait()
        shutil.rmtree(directory, ignore_errors=True)


async def bench_all(rounds: int, calls: int) -> list[list[object]]:
    if shutil.which("redis-server") is None:
        skipped: list[object] = ["all() 1,000 keys", "skipped: no redis-server on PATH"]
        return [skipped + [""] * 4]
    async with private_server() as port:
        crowded = f"redis://127.0.0.1:{port}/0"
        empty = f"redis://127.0.0.1:{port}/1"
        filler = aioredis.Redis.from_url(crowded)
        async with filler.pipeline(transaction=False) as pipe:
            for start in range(0, 200_000, 1000):
                pipe.mset({f"other:{i}": "x" * 100 for i in range(start, start + 1000)})
            await pipe.execute()
        await filler.aclose()
        values = sentences(1000, seed=5)
        memories = {"crowded": RedisMemory(url=crowded), "empty": RedisMemory(url=empty)}
        try:
            for memory in memories.values():
                for key, value in zip(KEYS, values, strict=True):
                    await memory.set(key, value, "bench")
                assert len(await memory.all("bench")) == 1000

            async def run(memory: RedisMemory) -> float:
                return await median_latency(lambda i: memory.all("bench"), calls)

            results = await interleave({"crowded": lambda: run(memories["crowded"]),
                                        "empty": lambda: run(memories["empty"])}, rounds)
            MARKERS.append(ratio_marker("RedisMemory all(): db with 200k other keys / empty db",
                                        results.ratio("crowded", "empty"), "≤ 1.5"))
            return [["all() of 1,000 keys, db with 200,000 other keys",
                     human_time(results.median("crowded")), "same, empty db",
                     human_time(results.median("empty")),
                     f"{results.ratio('crowded', 'empty'):.2f}x", "<= 1.5x"]]
        finally:
            for memory in memories.values():
                await memory.aclose()


# -- search -------------------------------------------------------------------------------------

async def bench_search(url: str, rounds: int, calls: int, size: int) -> list[list[object]]:
    prefix = f"bench:{secrets.token_hex(4)}:"
    memory = RedisMemory(url=url, prefix=prefix, default_ttl=0)
    corpus = sentences(size, seed=1)
    asked = queries(200)
    try:
        for i, text in enumerate(corpus):
            await memory.set(f"fact:{i}", text, "bench")
        start = time.perf_counter()
        await memory.search("warmup query", 5, "bench")  # indexes the 10,000 fresh entries
        first = time.perf_counter() - start
        for query in asked[:20]:
            server = await memory.search(query, 5, "bench")
            client = TokenOverlapScorer.rank(await memory.all("bench"), query, 5, "bench")
            assert [(h.key, h.score) for h in server] == [(h.key, h.score) for h in client]

        async def server_side() -> float:
            return await median_latency(
                lambda i: memory.search(asked[i % len(asked)], 5, "bench"), calls * 20)

        async def client_side() -> float:
            async def rank(i: int) -> object:
                entries = await memory.all("bench")
                return TokenOverlapScorer.rank(entries, asked[i % len(asked)], 5, "bench")

            return await median_latency(rank, calls)

        results = await interleave({"search": server_side, "all+rank": client_side}, rounds)
        MARKERS.append(ratio_marker(f"RedisMemory all() + client-side rank / search ({size // 1000}k)",
                                    results.ratio("all+rank", "search"), "≥ 5"))
        # The one-off cost of catching up: the first search after 1,000 fresh sets.
        for i in range(1000):
            await memory.set(f"fresh:{i}", corpus[i], "bench")
        start = time.perf_counter()
        await memory.search(asked[0], 5, "bench")
        catch_up = time.perf_counter() - start
        return [
            [f"search p50, {size:,} entries", human_time(results.median("search")),
             "all() + TokenOverlapScorer.rank", human_time(results.median("all+rank")),
             f"{results.ratio('all+rank', 'search'):.1f}x faster", "<= 10 ms, >= 5x"],
            [f"first search after {size:,} fresh sets (indexes them)", human_time(first),
             "", "", "", "one-off"],
            ["first search after 1,000 more sets", human_time(catch_up), "", "", "", "one-off"],
        ]
    finally:
        await memory.flush("bench")
        await remove_prefix(memory.client, prefix)  # type: ignore[arg-type]
        await memory.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer operations per round")
    args = parser.parse_args()
    n = 1000 if args.quick else 3000
    print(f"## RedisMemory ({machine()}, redis-py {_version()}, "
          f"medians of {args.rounds} interleaved rounds)\n")
    rows = await bench_get_set(args.url, args.rounds, n)
    rows += await bench_all(args.rounds, 10 if args.quick else 30)
    rows += await bench_search(args.url, args.rounds, 3 if args.quick else 5,
                               2000 if args.quick else 10_000)
    print(table(["RedisMemory", "figure", "reference", "figure", "ratio", "goal"], rows))
    print("\n".join(MARKERS))


def _version() -> str:
    import redis

    return str(redis.__version__)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
