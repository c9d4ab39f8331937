"""SqlMemory on SQLite, PostgreSQL and MariaDB, against raw SQLAlchemy Core in the same run.

Prints, for each dialect reachable (SQLite always; PostgreSQL and MariaDB on 127.0.0.1, each in
a database of its own created and dropped here):

* get / set throughput of SqlMemory against a raw Core ``SELECT`` / dialect upsert of the same
  row through the same engine (goal >= 0.8x), and a sketch of keeping the keyword rows up to
  date inside every set (upsert + delete + insert words in one transaction) for comparison;
* the latency of saving a conversation at turn 200 against turn 2 (goal <= 1.5x, flat);
* ``search`` p50 over 10,000 stored sentences (goal <= 20 ms on PostgreSQL and SQLite), with
  the one-off cost of the first search indexing the 10,000 fresh entries.

    python benchmarks/bench_sql.py [--rounds 7] [--quick] [--only sqlite,postgresql,mariadb]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _harness import (
    human_rate,
    human_time,
    interleave,
    machine,
    ops_per_second,
    ratio_marker,
    table,
)
from corpus import queries, sentences
from sqlalchemy import bindparam, delete, insert, select, text
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from ulid import ULID

from claw_memory.drivers.sql import SqlMemory

VALUE = "x" * 100
KEYS = [f"key:{i}" for i in range(1000)]
# The chart's ratios of the dialect being measured (name, value, goal); printed per dialect.
CHARTED: list[tuple[str, float, str]] = []
SERVERS = {
    "postgresql": ("postgresql+asyncpg://postgres@127.0.0.1:5432/{}", "test", 5432),
    "mariadb": ("mysql+asyncmy://root@127.0.0.1:3306/{}", "test", 3306),
}


def reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


async def admin(url: str, statement: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(statement))
    finally:
        await engine.dispose()


# -- get / set -------------------------------------------------------------------------------

def raw_statements(memory: SqlMemory) -> tuple[Any, Any]:
    m = memory.tables.memory
    get = select(m.c.value).where(m.c.namespace == bindparam("ns"), m.c.key == bindparam("key"))
    values: dict[str, Any] = {"namespace": bindparam("ns"), "key": bindparam("key"), "value": bindparam("value"),
              "seq": bindparam("seq"), "created_at": bindparam("now"),
              "updated_at": bindparam("now")}
    # The same row SqlMemory writes: every column, and the same ones changed on conflict.
    changed = ("value", "seq", "index_state", "expires_at", "updated_at")
    values.update(index_state=0, expires_at=bindparam("exp"))
    name = memory.engine.dialect.name
    if name in ("mysql", "mariadb"):
        mine = mysql.insert(m).values(values)
        return get, mine.on_duplicate_key_update({c: mine.inserted[c] for c in changed})
    ins = (postgresql.insert if name == "postgresql" else sqlite.insert)(m).values(values)
    upsert = ins.on_conflict_do_update(
        index_elements=["namespace", "key"], set_={c: ins.excluded[c] for c in changed})
    return get, upsert


async def throughput(memory: SqlMemory, rounds: int, n: int) -> list[list[object]]:
    engine: AsyncEngine = memory.engine
    get_q, upsert_q = raw_statements(memory)
    words = memory.tables.words
    unindex = delete(words).where(words.c.namespace == bindparam("ns"),
                                  words.c.key == bindparam("key"))
    encoded = '"' + VALUE + '"'
    sentence_words = [{"namespace": "sketch", "key": "", "word": w}
                      for w in ("customer", "prefers", "invoices", "email", "fridays", "order")]
    for key in KEYS:
        await memory.set(key, VALUE)

    async def raw_get(i: int) -> object:
        async with engine.connect() as conn:
            return (await conn.execute(get_q, {"ns": "default", "key": KEYS[i % 1000]})).scalar()

    async def raw_set(i: int) -> None:
        params = {"ns": "raw", "key": KEYS[i % 1000], "value": encoded, "seq": i,
                  "now": datetime.now(UTC), "exp": None}
        async with engine.begin() as conn:
            await conn.execute(upsert_q, params)

    async def eager_set(i: int) -> None:
        key = KEYS[i % 1000]
        params = {"ns": "sketch", "key": key, "value": encoded, "seq": i,
                  "now": datetime.now(UTC), "exp": None}
        async with engine.begin() as conn:
            await conn.execute(upsert_q, params)
            await conn.execute(unindex, {"ns": "sketch", "key": key})
            await conn.execute(insert(words), [dict(w, key=key) for w in sentence_words])

    variants: dict[str, Callable[[], Awaitable[float]]] = {
        "SqlMemory get": lambda: ops_per_second(lambda i: memory.get(KEYS[i % 1000]), n),
        "raw Core SELECT": lambda: ops_per_second(raw_get, n),
        "SqlMemory set": lambda: ops_per_second(lambda i: memory.set(KEYS[i % 1000], VALUE), n),
        "raw Core upsert": lambda: ops_per_second(raw_set, n),
        "sketch: upsert + keyword rows per set": lambda: ops_per_second(eager_set, n),
    }
    results = await interleave(variants, rounds)
    rows: list[list[object]] = [
        [name, human_rate(results.median(name)),
         " .. ".join(human_rate(x) for x in results.spread(name))]
        for name in variants
    ]
    rows.append(["ratio SqlMemory/raw get", f"{results.ratio('SqlMemory get', 'raw Core SELECT'):.2f}", "goal >= 0.8"])
    rows.append(["ratio SqlMemory/raw set", f"{results.ratio('SqlMemory set', 'raw Core upsert'):.2f}", "goal >= 0.8"])
    rows.append(["ratio eager-keywords sketch/raw set",
                 f"{results.ratio('sketch: upsert + keyword rows per set', 'raw Core upsert'):.2f}",
                 "why words are indexed at search time"])
    CHARTED.append(("SqlMemory get / raw Core SELECT",
                    results.ratio("SqlMemory get", "raw Core SELECT"), "≥ 0.8"))
    CHARTED.append(("SqlMemory set / raw Core upsert",
                    results.ratio("SqlMemory set", "raw Core upsert"), "≥ 0.8"))
    return rows


# -- conversations ---------------------------------------------------------------------------

def message(role: str, turn: int) -> dict[str, Any]:
    return {"id": str(ULID()), "role": role,
            "content": f"{role} message of turn {turn}: " + sentences(1, seed=turn)[0],
            "created_at": datetime.now(UTC).isoformat(), "name": None, "tool_call_id": None,
            "tool_calls": None}


async def conversation_turns(memory: SqlMemory, turns: int) -> dict[int, float]:
    """Save a new conversation turn by turn (2 messages each); latency per turn."""
    cid = str(ULID())
    now = datetime.now(UTC).isoformat()
    doc: dict[str, Any] = {"id": cid, "created_at": now, "updated_at": now, "title": None,
                           "metadata": {"channel": "bench"}, "messages": []}
    latencies = {}
    for turn in range(1, turns + 1):
        doc = dict(doc, updated_at=datetime.now(UTC).isoformat(),
                   messages=[*doc["messages"], message("user", turn), message("assistant", turn)])
        start = time.perf_counter()
        await memory.set(cid, doc, "conversations")
        latencies[turn] = time.perf_counter() - start
    return latencies


async def conversations(memory: SqlMemory, rounds: int, per_round: int) -> list[list[object]]:
    early: list[float] = []
    late: list[float] = []
    ratios: list[float] = []
    for _ in range(rounds):
        twos, two_hundreds = [], []
        for _ in range(per_round):
            latencies = await conversation_turns(memory, 200)
            twos.append(latencies[2])
            two_hundreds.append(latencies[200])
        a, b = statistics.median(twos), statistics.median(two_hundreds)
        early.append(a)
        late.append(b)
        ratios.append(b / a)
    CHARTED.append(("SqlMemory conversation save, turn 200 / turn 2", statistics.median(ratios),
                    "≤ 1.5"))
    return [
        ["save turn 2", human_time(statistics.median(early)),
         f"{human_time(min(early))} .. {human_time(max(early))}"],
        ["save turn 200", human_time(statistics.median(late)),
         f"{human_time(min(late))} .. {human_time(max(late))}"],
        ["ratio turn 200 / turn 2", f"{statistics.median(ratios):.2f}", "goal <= 1.5"],
    ]


# -- search ----------------------------------------------------------------------------------

async def search(memory: SqlMemory, rounds: int, n_queries: int) -> list[list[object]]:
    corpus = sentences(10_000)
    for i, sentence in enumerate(corpus):
        await memory.set(f"fact:{i}", sentence, "search")
    start = time.perf_counter()
    await memory.search("customer", 5, "search")
    first = time.perf_counter() - start
    asked = queries(n_queries)
    p50s = []
    for _ in range(rounds):
        samples = []
        for query in asked:
            start = time.perf_counter()
            await memory.search(query, 5, "search")
            samples.append(time.perf_counter() - start)
        p50s.append(statistics.median(samples))
    return [
        ["first search after 10,000 sets (indexes them)", human_time(first), "once"],
        ["search p50, 10,000 entries, limit 5", human_time(statistics.median(p50s)),
         f"{human_time(min(p50s))} .. {human_time(max(p50s))}; goal <= 20 ms"],
    ]


async def run_dialect(name: str, url: str, args: argparse.Namespace) -> None:
    n = 300 if args.quick else 2000
    async with SqlMemory(url) as memory:
        await memory.create_schema()
        print(f"\n### {name}\n")
        rows = await throughput(memory, args.rounds, n)
        rows += await conversations(memory, 3 if args.quick else args.rounds, 1 if args.quick else 3)
        rows += await search(memory, args.rounds, 20 if args.quick else 50)
        print(table(["figure", "median", "range / note"], rows))
        print("\n".join(ratio_marker(f"{label} ({name})", value, goal)
                        for label, value, goal in CHARTED))
        CHARTED.clear()
        sys.stdout.flush()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer operations per round")
    parser.add_argument("--only", default="sqlite,postgresql,mariadb")
    args = parser.parse_args()
    only = set(args.only.split(","))
    print(f"## SqlMemory ({machine()}, medians of {args.rounds} interleaved rounds)")
    if "sqlite" in only:
        with tempfile.TemporaryDirectory() as directory:
            await run_dialect("sqlite", f"sqlite+aiosqlite:///{Path(directory) / 'b.db'}", args)
    for name, (template, admin_db, port) in SERVERS.items():
        if name not in only:
            continue
        if not reachable(port):
            print(f"\n### {name}: not reachable on 127.0.0.1:{port}, skipped")
            continue
        database = f"claw_bench_{secrets.token_hex(4)}"
        await admin(template.format(admin_db), f"CREATE DATABASE {database}")
        try:
            await run_dialect(name, template.format(database), args)
        finally:
            force = " WITH (FORCE)" if name == "postgresql" else ""
            await admin(template.format(admin_db), f"DROP DATABASE IF EXISTS {database}{force}")


if __name__ == "__main__":
    asyncio.run(main())
