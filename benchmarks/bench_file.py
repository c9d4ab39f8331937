"""FileMemory against the file-system floors it is built from, measured in the same run.

For N = 1,000 and 10,000 entries, prints per-operation latency (medians of interleaved rounds)
and same-round ratios of:

* ``set`` (and its locked operation alone, without the thread hop) against the naive
  whole-file design (flock on a sidecar, read, parse, prune, modify,
  dump, temp file, ``os.replace``: the seed's FileMemory) and against an append-only log
  (open + flock + one write + close), both inline and through one thread hop, in both
  durability modes;
* ``get`` of an unchanged namespace against a stat-validated cache sketch (``os.stat`` + dict);
* ``search`` against ArrayMemory's search over the same data (the same ``KeywordIndex``).

    python benchmarks/bench_file.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from _harness import human_time, interleave, machine, ratio_marker, table
from corpus import queries, sentences

from claw_memory import ArrayMemory
from claw_memory.drivers.file import FileMemory

VALUE = "v" * 100
NAMESPACE = "bench"  # read and searched: left unchanged while measured
WRITES = "bench:writes"  # same size, overwritten by the set benchmarks
# Median per-op latency of each variant in each round, and the mean (compaction included).
MEANS: dict[str, list[float]] = {}


async def latency(name: str, op: Callable[[int], Awaitable[object]], n: int) -> float:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        await op(i)
        samples.append(time.perf_counter() - start)
    MEANS.setdefault(name, []).append(statistics.fmean(samples))
    return statistics.median(samples)


# -- the sketches --------------------------------------------------------------------------------
class NaiveJsonFile:
    """The whole-file design: every set rewrites the namespace's JSON document."""

    def __init__(self, path: Path, size: int, fsync: bool) -> None:
        self.path, self.lock, self.fsync = path, path.with_suffix(".lock"), fsync
        now = time.time()
        data = {f"k{i}": {"value": VALUE, "created_at": now,
                          "expires_at": now + 86400 if i % 2 else None} for i in range(size)}
        path.write_text(json.dumps(data))

    def set(self, key: str, value: Any) -> None:
        lock = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = json.loads(self.path.read_bytes())
            now = time.time()
            data = {k: e for k, e in data.items() if e["expires_at"] is None or e["expires_at"] > now}
            data[key] = {"value": value, "created_at": now, "expires_at": None}
            tmp = self.path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                f.write(json.dumps(data))
                if self.fsync:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            os.close(lock)


class AppendLog:
    """An append-only log: open + flock + one write + close per record."""

    def __init__(self, path: Path, size: int, fsync: bool) -> None:
        self.path, self.fsync = path, fsync
        line = json.dumps({"op": "set", "k": "k0", "v": VALUE, "t": time.time(), "x": None})
        path.write_text((line + "\n") * size)

    def append(self, key: str, value: str) -> None:
        line = json.dumps({"op": "set", "k": key, "v": value, "t": time.time(), "x": None})
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, (line + "\n").encode())
            if self.fsync:
                os.fdatasync(fd)
        finally:
            os.close(fd)


class StatCache:
    """A parsed cache validated by one ``os.stat`` of the file per read."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        path.write_text(json.dumps({f"k{i}": VALUE for i in range(1000)}))
        st = os.stat(self.path)
        self.identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        self.data = {f"k{i}": VALUE for i in range(1000)}

    async def get(self, key: str) -> Any:
        st = os.stat(self.path)
        if (st.st_ino, st.st_size, st.st_mtime_ns) != self.identity:
            raise RuntimeError("the benchmark file changed")
        return self.data.get(key)


# -- the benchmark ---------------------------------------------------------------------------------
async def filled(directory: Path, size: int, texts: list[str]) -> FileMemory:
    memory = FileMemory(directory)
    for i in range(size):
        await memory.set(f"k{i}", texts[i], NAMESPACE)
        await memory.set(f"k{i}", texts[i], WRITES)
    await memory.search("warm up the index", 3, NAMESPACE)
    return memory


async def bench_size(root: Path, size: int, rounds: int, ops: int) -> str:
    texts = sentences(size)
    asked = queries(200)
    base = root / f"n{size}"
    memory = await filled(base / "process", size, texts)
    shutil.copytree(base / "process", base / "fsync")
    durable = FileMemory(base / "fsync", durability="fsync")
    await durable.get("k0", WRITES)
    array = ArrayMemory()
    for i in range(size):
        await array.set(f"k{i}", texts[i], NAMESPACE)
    await array.search("warm up the index", 3, NAMESPACE)
    naive = NaiveJsonFile(base / "naive.json", size, fsync=False)
    naive_sync = NaiveJsonFile(base / "naive-fsync.json", size, fsync=True)
    log = AppendLog(base / "log.jsonl", size, fsync=False)
    log_sync = AppendLog(base / "log-fsync.jsonl", size, fsync=True)
    cache = StatCache(base / "cache.json")
    naive_ops = max(5, ops // (size // 100))

    def key(i: int) -> str:
        return f"k{(i * 7919) % size}"

    async def threaded(fn: Callable[[str, str], None], i: int) -> None:
        await anyio.to_thread.run_sync(fn, key(i), VALUE)

    async def inline(fn: Callable[[str, str], None], i: int) -> None:
        fn(key(i), VALUE)

    store, space = memory._store, memory._space(WRITES)  # the worker thread's part, inline

    async def locked_op(i: int) -> None:
        store.put(space, key(i), VALUE, False, json.dumps(VALUE), None)

    async def cached_get(i: int) -> Any:
        return await cache.get(f"k{i % 1000}")

    variants: dict[str, Callable[[], Awaitable[float]]] = {}

    def add(name: str, op: Callable[[int], Awaitable[object]], n: int = ops) -> None:
        variants[name] = lambda: latency(f"{size}:{name}", op, n)

    add("FileMemory set", lambda i: memory.set(key(i), VALUE, WRITES))
    add("FileMemory set fsync", lambda i: durable.set(key(i), VALUE, WRITES))
    add("FileMemory set, locked operation alone", locked_op)
    add("naive JSON set", lambda i: inline(naive.set, i), naive_ops)
    add("naive JSON set fsync", lambda i: inline(naive_sync.set, i), naive_ops)
    add("log append", lambda i: inline(log.append, i))
    add("log append fsync", lambda i: inline(log_sync.append, i))
    add("log append in a thread", lambda i: threaded(log.append, i))
    add("log append fsync in a thread", lambda i: threaded(log_sync.append, i))
    add("FileMemory get", lambda i: memory.get(key(i), NAMESPACE), ops * 10)
    add("stat-validated cache get", cached_get, ops * 10)
    add("FileMemory search", lambda i: memory.search(asked[i % 200], 3, NAMESPACE))
    add("ArrayMemory search", lambda i: array.search(asked[i % 200], 3, NAMESPACE))

    for query in asked[:20]:  # the index answers exactly as ArrayMemory's
        got = [(h.key, h.score) for h in await memory.search(query, 3, NAMESPACE)]
        assert got == [(h.key, h.score) for h in await array.search(query, 3, NAMESPACE)]
    results = await interleave(variants, rounds)

    rows = [
        [name, human_time(results.median(name)),
         human_time(statistics.median(MEANS[f"{size}:{name}"])),
         "..".join(human_time(x) for x in results.spread(name))]
        for name in variants
    ]
    ratios = [
        # No goal: an inline append blocks the event loop, which FileMemory never does; the
        # floor it is held to is the same append made in a worker thread (next row).
        ("FileMemory set / log append (no fsync)", "FileMemory set", "log append", "–"),
        ("FileMemory set / log append in a thread (no fsync)", "FileMemory set",
         "log append in a thread", "≤ 2"),
        ("FileMemory set, locked operation alone / log append (no fsync)",
         "FileMemory set, locked operation alone", "log append", "≤ 2"),
        ("FileMemory set fsync / log append fsync", "FileMemory set fsync", "log append fsync",
         "–"),
        ("FileMemory set fsync / log append fsync in a thread", "FileMemory set fsync",
         "log append fsync in a thread", "≤ 2"),
        ("naive JSON set / FileMemory set (no fsync)", "naive JSON set", "FileMemory set", "–"),
        ("naive JSON set fsync / FileMemory set fsync", "naive JSON set fsync",
         "FileMemory set fsync", "–"),
        ("FileMemory get / stat-validated cache get", "FileMemory get",
         "stat-validated cache get", "≤ 2"),
        ("FileMemory search / ArrayMemory search", "FileMemory search", "ArrayMemory search",
         "≤ 1.5"),
    ]
    # The chart's names for the ratios with a goal and the comparison with the naive design.
    charted = {
        "FileMemory set / log append (no fsync)": "FileMemory set / log append",
        "FileMemory set / log append in a thread (no fsync)":
            "FileMemory set / log append in a thread",
        "FileMemory set, locked operation alone / log append (no fsync)":
            "FileMemory set's locked op / log append",
        "FileMemory set fsync / log append fsync in a thread":
            "FileMemory set fsync / log append fsync in a thread",
        "naive JSON set / FileMemory set (no fsync)": "naive whole-file JSON set / FileMemory set",
        "FileMemory get / stat-validated cache get": "FileMemory get / stat-validated cache",
        "FileMemory search / ArrayMemory search": "FileMemory search / ArrayMemory search",
    }
    short = f"{size // 1000}k" if size % 1000 == 0 else f"{size:,}"
    markers = [
        ratio_marker(f"{charted[label]} (N={short})", results.ratio(a, b),
                     "" if goal == "–" else goal)
        for label, a, b, goal in ratios if label in charted
    ]
    await memory.aclose()
    await durable.aclose()
    return (
        f"### N = {size:,} entries\n\n"
        + table(["variant", "p50", "mean (compaction included)", "range of p50"], rows)
        + "\n\n"
        + table(["same-round ratio", "value", "goal"],
                [[label, f"{results.ratio(a, b):.2f}", goal] for label, a, b, goal in ratios])
        + "\n"
        + "\n".join(markers)
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer operations per round")
    args = parser.parse_args()
    ops = 100 if args.quick else 300
    print(f"## FileMemory ({machine()}, medians of {args.rounds} interleaved rounds)\n")
    with tempfile.TemporaryDirectory(prefix="bench-file-") as tmp:
        for size in (1_000, 10_000):
            print(await bench_size(Path(tmp), size, args.rounds, ops))
            print()


if __name__ == "__main__":
    asyncio.run(main())
