"""In-process drivers: ArrayMemory against LangGraph's InMemoryStore and aiocache.

Prints, from one run: get/set throughput of ArrayMemory and of the peers, as same-round ratios,
and search latency on a namespace of 10,000 realistic sentences against ranking a full scan of
the same data (what a driver without an index does on every recall).

    python benchmarks/bench_inproc.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _harness import (
    human_rate,
    human_time,
    interleave,
    machine,
    median_latency,
    ops_per_second,
    ratio_marker,
    table,
)
from corpus import queries, sentences

from claw_memory import ArrayMemory, TokenOverlapScorer

VALUE = "x" * 100
KEYS = [f"key:{i}" for i in range(1000)]


async def throughput(rounds: int, n: int) -> str:
    from aiocache import SimpleMemoryCache
    from langgraph.store.memory import InMemoryStore

    memory = ArrayMemory()
    store = InMemoryStore()
    cache = SimpleMemoryCache()
    cache_no_timeout = SimpleMemoryCache(timeout=None)
    doc = {"value": VALUE}
    for key in KEYS:
        await memory.set(key, VALUE)
        await store.aput(("default",), key, doc)
        await cache.set(key, VALUE)
        await cache_no_timeout.set(key, VALUE)
    dict_value = {"text": VALUE, "tags": ["a", "b"], "n": 1}

    variants = {
        "ArrayMemory get": lambda: ops_per_second(lambda i: memory.get(KEYS[i % 1000]), n),
        "ArrayMemory set": lambda: ops_per_second(lambda i: memory.set(KEYS[i % 1000], VALUE), n),
        "ArrayMemory set (dict value)": lambda: ops_per_second(
            lambda i: memory.set(KEYS[i % 1000], dict_value, "dicts"), n),
        "InMemoryStore aget": lambda: ops_per_second(lambda i: store.aget(("default",), KEYS[i % 1000]), n),
        "InMemoryStore aput": lambda: ops_per_second(
            lambda i: store.aput(("default",), KEYS[i % 1000], doc), n),
        "SimpleMemoryCache get": lambda: ops_per_second(lambda i: cache.get(KEYS[i % 1000]), n // 20),
        "SimpleMemoryCache set": lambda: ops_per_second(lambda i: cache.set(KEYS[i % 1000], VALUE), n // 20),
        "SimpleMemoryCache(timeout=None) get": lambda: ops_per_second(
            lambda i: cache_no_timeout.get(KEYS[i % 1000]), n // 4),
    }
    results = await interleave(variants, rounds)
    rows = [
        [name, human_rate(results.median(name)),
         f"{human_rate(results.spread(name)[0])}..{human_rate(results.spread(name)[1])}"]
        for name in variants
    ]
    ratios = [
        ("ArrayMemory get / InMemoryStore aget", results.ratio("ArrayMemory get", "InMemoryStore aget"), "≥ 5"),
        ("ArrayMemory set / InMemoryStore aput", results.ratio("ArrayMemory set", "InMemoryStore aput"), "≥ 5"),
        ("ArrayMemory set (dict value) / InMemoryStore aput",
         results.ratio("ArrayMemory set (dict value)", "InMemoryStore aput"), "–"),
        ("ArrayMemory get / SimpleMemoryCache get", results.ratio("ArrayMemory get", "SimpleMemoryCache get"), "–"),
        ("ArrayMemory set / SimpleMemoryCache set", results.ratio("ArrayMemory set", "SimpleMemoryCache set"), "–"),
        ("ArrayMemory get / SimpleMemoryCache(timeout=None) get",
         results.ratio("ArrayMemory get", "SimpleMemoryCache(timeout=None) get"), "–"),
    ]
    return (
        table(["variant", "ops/s (median)", "range"], rows)
        + "\n\n"
        + table(["same-round ratio", "value", "goal"], [[a, f"{b:.2f}", c] for a, b, c in ratios])
        + "\n"
        + "\n".join(ratio_marker(a, b, c) for a, b, c in ratios[:2])
    )


async def search(rounds: int, size: int, n_queries: int) -> str:
    memory = ArrayMemory()
    for i, text in enumerate(sentences(size)):
        await memory.set(f"fact:{i}", text)
    asked = queries(n_queries)
    await memory.search("warm the index up")  # the first search indexes every pending write

    async def scan(i: int) -> object:
        return TokenOverlapScorer.rank(await memory.all(), asked[i % len(asked)], 3)

    variants = {
        "indexed search": lambda: median_latency(lambda i: memory.search(asked[i % len(asked)], 3), n_queries),
        "rank a full scan": lambda: median_latency(scan, max(5, n_queries // 20)),
    }
    results = await interleave(variants, rounds)
    # The scan ranks exactly like the index: check on the benchmark's own queries.
    for query in asked[:20]:
        indexed = [(h.key, h.score) for h in await memory.search(query, 3)]
        ranked = [(h.key, h.score) for h in TokenOverlapScorer.rank(await memory.all(), query, 3)]
        assert indexed == ranked, query
    start = time.perf_counter()
    fresh = ArrayMemory()
    for i, text in enumerate(sentences(size)):
        await fresh.set(f"fact:{i}", text)
    await fresh.search(asked[0])
    first = time.perf_counter() - start
    rows = [
        [f"search p50, {size:,} entries", human_time(results.median("indexed search"))],
        [f"rank all() p50, {size:,} entries", human_time(results.median("rank a full scan"))],
        ["scan / search (same round)", f"{results.ratio('rank a full scan', 'indexed search'):.1f}×"],
        [f"{size:,} sets + first search (indexing them)", human_time(first)],
    ]
    return table(["search (top 3, realistic sentences)", "figure"], rows) + (
        "\n\nGoals: search p50 ≤ 2 ms and ≥ 20× faster than ranking a full scan.\n"
        + ratio_marker(
            "ArrayMemory: rank all() / indexed search, 10k entries",
            results.ratio("rank a full scan", "indexed search"),
            "≥ 20",
        )
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer operations per round")
    args = parser.parse_args()
    n = 20_000 if args.quick else 100_000
    print(f"## In-process drivers ({machine()}, medians of {args.rounds} interleaved rounds)\n")
    print(await throughput(args.rounds, n))
    print()
    print(await search(args.rounds, 10_000, 100 if args.quick else 400))


if __name__ == "__main__":
    asyncio.run(main())
