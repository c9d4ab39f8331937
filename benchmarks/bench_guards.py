"""Default guards on long messages, including inputs built to make regexes backtrack.

Prints, from one run, the time all default guards take on a 40,000-character ordinary message
and each guard's time on pathological inputs, as ratios to a plain ``re`` scan of the same text
for one literal word (the floor any text guard pays). A pattern that goes quadratic shows as a
ratio in the thousands.

    python benchmarks/bench_guards.py [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time

from _harness import human_time, machine, ratio_marker, table

from claw_memory.guards import GuardSet, default_guards

SENTENCES = [
    "The quarterly report shows revenue grew 12 percent compared with 2023.",
    "Please summarise the meeting notes and list the action items for Monday.",
    "Our team will act on the feedback from the 3 workshops before the release.",
    "Каждый вечер мы читаем книги и обсуждаем их за ужином.",
    "The recipe needs 250 g of flour, 2 eggs and a pinch of salt.",
    "Can you explain how a hash map resolves collisions?",
    "We shipped version 4.2.1 on 2024-06-30 after the final review.",
    "Καλό απόγευμα σε όλους, τα λέμε αύριο στις 10:00.",
]

ADVERSARIAL = {
    "letters": "a" * 40_000,
    "digits": "1" * 40_000,
    "spaced digits": "1234 " * 8_000,
    "dashed digits": "1-" * 20_000,
    "at signs": "a@" * 20_000,
    "dots": "a." * 20_000,
    "braces": "{{" * 20_000,
    "percent tags": "{% " * 13_333,
    "quotes": "' or " * 8_000,
    "plus signs": "+1 " * 13_333,
    "spaces": " " * 40_000,
    "repeated trigger": "ignore the previous " * 2_000,
    "act as": "act as a " * 4_444,
    "zero width": "a\u200b" * 20_000,
    "fullwidth": "ｉｇｎｏｒｅ " * 5_714,
}

FLOOR = re.compile(r"\bzeppelin\b", re.IGNORECASE)


def best_of(runs: int, action: object) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 rounds")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 2
    text = ""
    index = 0
    while len(text) < 40_000:
        text += SENTENCES[index % len(SENTENCES)] + " "
        index += 1
    text = text[:40_000]
    guards = GuardSet(default_guards())
    assert await guards.check(text, text) is None
    all_times, floors = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        await guards.check(text, text)
        all_times.append(time.perf_counter() - start)
        floors.append(best_of(1, lambda: FLOOR.search(text)))
    ordinary = statistics.median(a / f for a, f in zip(all_times, floors, strict=True))
    print(f"## Guards ({machine()}, {args.rounds} rounds)\n")
    print(table(
        ["40,000-character ordinary message", "figure"],
        [["all default guards, median", human_time(statistics.median(all_times))],
         ["one-word regex scan (floor), median", human_time(statistics.median(floors))],
         ["guards / floor", f"{ordinary:.0f}×"]],
    ))
    print(ratio_marker("default guards / one-word regex (40k chars)", ordinary))
    rows = []
    worst_input, worst_ratio = "", 0.0
    for name, sample in ADVERSARIAL.items():
        sample = sample[:40_000]
        floor = best_of(args.rounds, lambda s=sample: FLOOR.search(s))
        worst_name, worst = "", 0.0
        for guard in default_guards(max_chars=100_000):
            seconds = best_of(args.rounds, lambda g=guard, s=sample: g.scan(s))
            if seconds > worst:
                worst_name, worst = guard.name, seconds
        rows.append([name, worst_name, human_time(worst), f"{worst / floor:.0f}×"])
        if worst / floor > worst_ratio:
            worst_input, worst_ratio = name, worst / floor
    print()
    print(table(["pathological input (40,000 chars)", "slowest guard", "time (best)", "/ floor"], rows))
    print(ratio_marker(f"slowest guard on '{worst_input}' / one-word regex", worst_ratio))


if __name__ == "__main__":
    asyncio.run(main())
