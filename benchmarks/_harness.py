"""Shared benchmark method: interleaved rounds, medians, same-round ratios.

Inside a round every variant runs once; the order rotates by one each round so no variant always
goes first. A figure is the median over rounds; a ratio is the median of the per-round ratios
(never a ratio of two medians). ``gc.collect()`` runs before each timed block.
"""

from __future__ import annotations

import gc
import platform
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

Variant = Callable[[], Awaitable[float]]  # returns the measured figure of one round


@dataclass
class Results:
    rounds: dict[str, list[float]] = field(default_factory=dict)

    def median(self, name: str) -> float:
        return statistics.median(self.rounds[name])

    def spread(self, name: str) -> tuple[float, float]:
        return min(self.rounds[name]), max(self.rounds[name])

    def ratio(self, a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(self.rounds[a], self.rounds[b], strict=True))


async def interleave(variants: Mapping[str, Variant], rounds: int = 7) -> Results:
    """Run every variant once per round, rotating the order, and collect the figures."""
    names = list(variants)
    results = Results({name: [] for name in names})
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            gc.collect()
            results.rounds[name].append(await variants[name]())
    return results


async def ops_per_second(op: Callable[[int], Awaitable[object]], n: int) -> float:
    """Throughput of ``n`` sequential awaited calls ``op(i)``."""
    start = time.perf_counter()
    for i in range(n):
        await op(i)
    return n / (time.perf_counter() - start)


async def median_latency(op: Callable[[int], Awaitable[object]], n: int) -> float:
    """Median latency in seconds of ``n`` sequential awaited calls ``op(i)``."""
    samples = []
    for i in range(n):
        start = time.perf_counter()
        await op(i)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def human_rate(value: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.2f} {unit}/s"
    return f"{value:.0f} /s"


def human_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.1f} µs"
    return f"{seconds * 1e9:.0f} ns"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    import os

    return (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores, {platform.machine()}"
    )


def ratio_marker(name: str, value: float, goal: str = "") -> str:
    """An invisible Markdown line ``run_all.py`` collects for the report's chart."""
    return f"<!-- ratio: {name} = {value:.4f} | goal: {goal} -->"
