"""Run every benchmark in this folder and write ``REPORT.md`` and ``ratios.png``.

Each ``bench_*.py`` prints Markdown tables of figures and same-run ratios; lines of the form
``<!-- ratio: name = value | goal: text -->`` are collected into the chart. Benchmarks that need
a service that is not reachable print why and are reported as not run.

    python benchmarks/run_all.py [--quick] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RATIO = re.compile(r"<!-- ratio: (?P<name>.+?) = (?P<value>[0-9.eE+-]+) \| goal: (?P<goal>.*?) -->")


def describe_machine() -> str:
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        cpu = platform.processor() or "unknown CPU"
    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} cores ({cpu}), "
        f"Python {platform.python_version()}"
    )


GOAL = re.compile(r"^\s*(?P<op>≥|>=|≤|<=)\s*(?P<bound>[0-9.]+)\s*[x×]?\s*$")
COLOURS = {"met": "#2e8b57", "missed": "#d1495b", "none": "#8c8c8c"}


def verdict(value: float, goal: str) -> str:
    """``met`` or ``missed`` for a goal such as ``≥ 0.8`` or ``≤ 1.5``, ``none`` without one."""
    match = GOAL.match(goal)
    if match is None:
        return "none"
    bound = float(match["bound"])
    met = value >= bound if match["op"] in ("≥", ">=") else value <= bound
    return "met" if met else "missed"


def chart(ratios: list[tuple[str, float, str]], groups: list[int], path: Path) -> bool:
    """A horizontal bar per ratio, drawn from parity (1.0) on a log axis; ``groups`` holds the
    index of each benchmark's first ratio, where a separator line goes."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        return False
    if not ratios:
        return False
    names = [name for name, _, _ in ratios]
    values = [value for _, value, _ in ratios]
    verdicts = [verdict(value, goal) for _, value, goal in ratios]
    fig, ax = plt.subplots(figsize=(11, 0.3 * len(ratios) + 1.4))
    # Bars start at parity, so a ratio below 1 points left of the line; a dot marks the value
    # (visible for ratios close to 1) and a black tick the goal's bound.
    colours = [COLOURS[v] for v in verdicts]
    ax.barh(range(len(values)), [v - 1 for v in values], left=1, color=colours, height=0.6)
    ax.scatter(values, range(len(values)), color=colours, s=18, zorder=3)
    bounds = [(i, float(m["bound"])) for i, (_, _, goal) in enumerate(ratios)
              if (m := GOAL.match(goal)) is not None]
    if bounds:
        ax.scatter([b for _, b in bounds], [i for i, _ in bounds], marker="|", color="black",
                   s=90, linewidths=1.2, zorder=4)
    ax.set_yticks(range(len(values)), names, fontsize=8)
    ax.set_ylim(len(values) - 0.5, -0.5)  # first ratio on top
    ax.set_xscale("log")
    # Room on the right for the value and goal written after the longest bar.
    ax.set_xlim(min(min(values) / 1.5, 0.4), max(max(values) * 8, 100))
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.grid(axis="x", which="major", linewidth=0.4, alpha=0.5)
    for start in groups[1:]:
        ax.axhline(start - 0.5, color="#555555", linewidth=0.6, linestyle=":")
    ax.set_xlabel("same-run ratio, log scale; bars start at 1 (what each compares: REPORT.md)")
    for i, (value, (_, _, goal), result) in enumerate(zip(values, ratios, verdicts, strict=True)):
        note = f"{value:.2f}" + (f"  (goal {goal}: {result})" if result != "none" else "")
        # Written right of the bar, the dot and the goal's tick, whichever ends last.
        ax.text(max(value, dict(bounds).get(i, 1.0), 1.0) * 1.1, i, note, va="center",
                fontsize=7)
    ax.legend(handles=[Patch(color=COLOURS["met"], label="goal met"),
                       Patch(color=COLOURS["missed"], label="goal missed"),
                       Patch(color=COLOURS["none"], label="no goal (comparison)"),
                       Line2D([], [], marker="|", color="black", linestyle="none",
                              markersize=9, label="goal's bound")],
              loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="pass --quick to each benchmark")
    parser.add_argument("--only", nargs="*", help="benchmark names, e.g. inproc redis")
    args = parser.parse_args()
    # Drivers first, then what is built on them; any other script after, by name.
    order = ["inproc", "file", "redis", "sql", "engine", "guards"]
    scripts = sorted(HERE.glob("bench_*.py"), key=lambda s: (
        order.index(s.stem.removeprefix("bench_")) if s.stem.removeprefix("bench_") in order
        else len(order), s.name))
    if args.only:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in args.only]
    sections: list[str] = []
    ratios: list[tuple[str, float, str]] = []
    groups: list[int] = []
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    for script in scripts:
        command = [sys.executable, str(script)] + (["--quick"] if args.quick else [])
        print(f"running {script.name} ...", flush=True)
        began = time.monotonic()
        done = subprocess.run(command, cwd=HERE, capture_output=True, text=True)
        took = time.monotonic() - began
        output = done.stdout.strip()
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            output += f"\n\n**{script.name} did not complete** (exit {done.returncode}):\n\n```\n{tail}\n```"
        print(output, flush=True)
        print(f"{script.name}: {took:.0f} s", flush=True)
        sections.append(f"<!-- {script.name}: {took:.0f} s -->\n{output}\n")
        found = [(m["name"], float(m["value"]), m["goal"]) for m in RATIO.finditer(output)]
        if found:
            groups.append(len(ratios))
        ratios += found
    total = time.monotonic() - started
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    has_chart = chart(ratios, groups, HERE / "ratios.png")
    mode = "`run_all.py --quick` (fewer operations per round)" if args.quick else "`run_all.py`"
    report = [
        "# Benchmark report",
        "",
        f"Generated by {mode} on {stamp} in {total / 60:.0f} min. "
        f"Machine: {describe_machine()}; load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end.",
        "",
        "Every ratio compares two things measured in the same run, in interleaved rounds "
        "(medians of per-round ratios). Absolute times on a shared machine drift 10–50 % "
        "from run to run; the ratios hold better, though not exactly.",
        "",
    ]
    if ratios:
        rows = [
            f"| {name} | {value:.2f} | {goal or '–'} | {verdict(value, goal).replace('none', '–')} |"
            for name, value, goal in ratios
        ]
        report += ["## Headline ratios", "",
                   "| same-run ratio | value | goal | result |", "|---|---|---|---|",
                   *rows, ""]
    if has_chart:
        report += ["![same-run ratios: green met its goal, red missed it, grey has none](ratios.png)",
                   ""]
    report += sections
    (HERE / "REPORT.md").write_text("\n".join(report) + "\n", encoding="utf-8")
    print(f"wrote {HERE / 'REPORT.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
