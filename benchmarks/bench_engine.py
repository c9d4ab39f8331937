"""The engine's own cost: what an agent adds on top of calling its model directly.

Prints, from one run, against the raw ``EchoModel`` measured in the same rounds:

* ``send`` latency (p50) with the default guards, without memory and with a 10,000-entry
  ``ArrayMemory`` recalled on every message, against ``EchoModel.complete``;
* first-chunk latency of ``stream`` (from the call to the first delta) without memory and with
  recall, against the first chunk of ``EchoModel.stream``.

"Added" is the median over rounds of (variant p50 - raw p50) from the same round; the ratio is
the median of the per-round ratios. The goals are on the added time; the chart shows the
ratios with no goal of their own.

    python benchmarks/bench_engine.py [--rounds 7] [--calls 400] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Callable

from _harness import (
    Results,
    human_time,
    interleave,
    machine,
    median_latency,
    ratio_marker,
    table,
)
from corpus import queries, sentences

from claw_memory import ArrayMemory
from claw_memory.engine import Agent, Claw
from claw_memory.models import ChatMessage, EchoModel

ENTRIES = 10_000


async def first_chunk_latency(open_stream: Callable[[int], AsyncIterator[str]], n: int) -> float:
    """Median time from opening a stream to its first delta; each stream is then read to its end
    (untimed), so no call ends in an abort."""
    samples = []
    for i in range(n):
        start = time.perf_counter()
        stream = open_stream(i)
        await anext(stream)
        samples.append(time.perf_counter() - start)
        async for _ in stream:
            pass
    return statistics.median(samples)


def added(results: Results, variant: str, raw: str) -> float:
    pairs = zip(results.rounds[variant], results.rounds[raw], strict=True)
    return statistics.median(a - b for a, b in pairs)


async def main(rounds: int, calls: int) -> None:
    model = EchoModel()
    memory = ArrayMemory()
    for i, text in enumerate(sentences(ENTRIES)):
        await memory.set(f"fact:{i}", text)
    plain: Agent = Claw.builder().model(model).build()
    recalling: Agent = Claw.builder().model(model).memory(memory).build()
    unguarded: Agent = Claw.builder().model(model).memory(memory).default_guards(False).build()
    messages = queries(200)

    def raw(i: int) -> list[ChatMessage]:
        return [{"role": "user", "content": messages[i % len(messages)]}]

    # Warm-up: the first search builds the keyword index of the 10,000 entries.
    for agent in (plain, recalling, unguarded):
        await agent.send(messages[0])

    variants = {
        "EchoModel.complete (raw)": lambda: median_latency(lambda i: model.complete(raw(i)), calls),
        "send, no memory": lambda: median_latency(
            lambda i: plain.send(messages[i % len(messages)]), calls),
        "send, 10,000-entry ArrayMemory": lambda: median_latency(
            lambda i: recalling.send(messages[i % len(messages)]), calls),
        "send, 10,000-entry ArrayMemory, no guards": lambda: median_latency(
            lambda i: unguarded.send(messages[i % len(messages)]), calls),
        "EchoModel.stream first chunk (raw)": lambda: first_chunk_latency(
            lambda i: model.stream(raw(i)), calls),
        "stream first chunk, no memory": lambda: first_chunk_latency(
            lambda i: plain.stream(messages[i % len(messages)]), calls),
        "stream first chunk, 10,000-entry ArrayMemory": lambda: first_chunk_latency(
            lambda i: recalling.stream(messages[i % len(messages)]), calls),
    }
    results = await interleave(variants, rounds)

    print(f"## Engine overhead ({machine()}, medians of {rounds} interleaved rounds of {calls} calls)")
    print()
    rows = [
        [name, human_time(results.median(name)),
         f"{human_time(results.spread(name)[0])}..{human_time(results.spread(name)[1])}"]
        for name in variants
    ]
    print(table(["variant", "p50 (median over rounds)", "range"], rows))
    print()
    checks = [
        ("send added, 10,000-entry ArrayMemory", "send, 10,000-entry ArrayMemory",
         "EchoModel.complete (raw)", 3e-3),
        ("send added, no memory", "send, no memory", "EchoModel.complete (raw)", None),
        ("send added, 10,000 entries, no guards", "send, 10,000-entry ArrayMemory, no guards",
         "EchoModel.complete (raw)", None),
        ("stream first chunk added, no memory", "stream first chunk, no memory",
         "EchoModel.stream first chunk (raw)", 1e-3),
        ("stream first chunk added, 10,000-entry ArrayMemory",
         "stream first chunk, 10,000-entry ArrayMemory", "EchoModel.stream first chunk (raw)",
         3e-3),
    ]
    charted = {  # the chart's names of the same ratios
        "send, no memory": "Agent.send, no memory / EchoModel.complete",
        "send, 10,000-entry ArrayMemory": "Agent.send, 10k ArrayMemory / EchoModel.complete",
        "stream first chunk, no memory":
            "Agent.stream 1st chunk, no memory / EchoModel.stream 1st chunk",
        "stream first chunk, 10,000-entry ArrayMemory":
            "Agent.stream 1st chunk, 10k ArrayMemory / EchoModel.stream 1st chunk",
    }
    rows = []
    for label, variant, reference, goal in checks:
        extra = added(results, variant, reference)
        verdict = "–" if goal is None else (
            f"≤ {human_time(goal)}: {'met' if extra <= goal else 'MISSED'}"
        )
        rows.append([label, human_time(extra), f"{results.ratio(variant, reference):.1f}×",
                     verdict])
    print(table(["same-round comparison", "added p50", "ratio to raw", "goal"], rows))
    print("\n".join(ratio_marker(charted[variant], results.ratio(variant, reference))
                    for _, variant, reference, _ in checks if variant in charted))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="3 rounds of 100 calls")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.calls = 3, 100
    asyncio.run(main(args.rounds, args.calls))
