"""RedisMemory on a 3-master Redis Cluster started by the tests (the conformance suite runs on
it too, as ``redis-cluster``)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import defaultdict

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from claw_memory.drivers.redis import RedisMemory
from claw_memory.errors import DriverUnavailableError
from tests.drivers.redis.servers import RedisClusterServers, shared_cluster
from tests.support.drivers_redis import remove_keys, unique_prefix


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> RedisClusterServers:
    return shared_cluster(request.config)


async def test_each_namespace_lives_on_one_node_and_namespaces_spread(
    cluster: RedisClusterServers,
) -> None:
    prefix = unique_prefix()
    async with RedisMemory(url=cluster.url, prefix=prefix) as memory:
        try:
            namespaces = [f"user:{i}" for i in range(24)]
            for namespace in namespaces:
                for key in ("a", "{b}", "c}d{"):
                    await memory.set(key, f"gold words in {namespace}", namespace)
                assert len(await memory.search("gold words", 5, namespace)) == 3
            nodes_of: dict[str, set[int]] = defaultdict(set)
            for node in cluster.nodes:  # a plain client scans that one node's keys
                client = aioredis.Redis(port=node.port)
                try:
                    async for name in client.scan_iter(match=prefix + "*"):
                        namespace = name.decode()[len(prefix) + 1:].split("}", 1)[0]
                        nodes_of[namespace].add(node.port)
                finally:
                    await client.aclose()
            assert sorted(nodes_of) == sorted(namespaces)
            assert all(len(ports) == 1 for ports in nodes_of.values())
            assert len(set().union(*nodes_of.values())) == 3
        finally:
            await remove_keys(memory, prefix)


async def test_a_cluster_client_passed_in_works_and_is_left_open(
    cluster: RedisClusterServers,
) -> None:
    client = RedisCluster.from_url(f"redis://127.0.0.1:{cluster.nodes[1].port}")
    prefix = unique_prefix()
    try:
        async with RedisMemory(client, prefix=prefix) as memory:
            await memory.set("k", {"v": "cluster words"}, "ns")
            assert await memory.all("ns") == {"k": {"v": "cluster words"}}
            assert [h.key for h in await memory.search("cluster", 5, "ns")] == ["k"]
            await memory.flush("ns")
            assert await memory.all("ns") == {}
        assert await client.ping()
        await remove_keys(memory, prefix)
    finally:
        await client.aclose()


def test_a_new_event_loop_each_time_closes_cleanly(cluster: RedisClusterServers) -> None:
    # redis-py's cluster transactions tie a connection to the loop that ran them; RedisMemory
    # uses scripts only, so building, using and closing it in fresh loops must just work.
    prefix = unique_prefix()

    async def once(i: int) -> None:
        async with RedisMemory(url=cluster.url, prefix=prefix) as memory:
            await memory.set(f"k{i}", "loop words", "loops")
            assert len(await memory.search("loop", 5, "loops")) == i + 1
            if i == 2:
                await memory.flush("loops")
                await remove_keys(memory, prefix)

    for i in range(3):
        asyncio.run(once(i))


async def test_namespaces_are_listed_from_every_node(cluster: RedisClusterServers) -> None:
    prefix = unique_prefix()
    namespaces = [f"team.{i}" for i in range(12)]
    async with RedisMemory(url=cluster.url, prefix=prefix) as memory:
        try:
            for namespace in namespaces:
                await memory.set("k", 1, namespace)
            assert await memory.namespaces() == sorted(namespaces)
            assert [e.key for e in await memory.entries("team.3")] == ["k"]
        finally:
            await remove_keys(memory, prefix)


async def test_concurrent_first_operations_on_a_new_client_all_succeed(
    cluster: RedisClusterServers,
) -> None:
    # redis-py's cluster client races when its first commands run concurrently; the driver
    # initialises it once before any command.
    prefix = unique_prefix()
    for round_ in range(15):
        async with RedisMemory(url=cluster.url, prefix=prefix) as memory:
            try:
                await asyncio.gather(
                    *(memory.set(f"k{i}", i, f"conc{round_}") for i in range(50)),
                    *(memory.get(f"k{i}", f"other{round_}") for i in range(10)),
                )
                assert len(await memory.all(f"conc{round_}")) == 50
            finally:
                await remove_keys(memory, prefix)


async def test_a_silent_node_fails_discovery_and_commands_within_the_timeout(
    cluster: RedisClusterServers,
) -> None:
    # Each node is stopped for well under --cluster-node-timeout: no failover happens.
    first = cluster.nodes[0]
    assert first.pid is not None
    prefix = unique_prefix()
    async with RedisMemory(url=cluster.url, prefix=prefix, timeout=0.4) as memory:
        os.kill(first.pid, signal.SIGSTOP)  # the node the URL names: discovery asks it first
        try:
            started = time.monotonic()
            with pytest.raises(DriverUnavailableError, match="TimeoutError"):
                await memory.get("k")
            assert time.monotonic() - started < 0.4 + 0.8
        finally:
            os.kill(first.pid, signal.SIGCONT)
        await memory.set("k", "words")  # discovery ran again and the client works
        owner = next(
            node for node in cluster.nodes
            if node.port == memory.client.get_node_from_key(  # type: ignore[union-attr]
                f"{prefix}{{default}}:o").port
        )
        assert owner.pid is not None
        os.kill(owner.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(DriverUnavailableError, match="TimeoutError"):
                await memory.set("k", "other words")
            assert time.monotonic() - started < 0.4 + 0.8
        finally:
            os.kill(owner.pid, signal.SIGCONT)
        assert await memory.get("k") in ("words", "other words")
        await remove_keys(memory, prefix)
