"""How RedisMemory connects: URLs, credentials, ownership of clients, failures, lazy import."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from claw_memory.drivers.redis import RedisMemory
from claw_memory.errors import DriverUnavailableError
from tests.drivers.redis.servers import RedisServer, free_port


@pytest.fixture
def acl_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A server whose only user is ``alice`` (password ``s3cret-pw``)."""
    server = RedisServer(tmp_path / "acl", args=[
        "--user", "default", "off",
        "--user", "alice", "on", ">s3cret-pw", "~*", "&*", "+@all",
    ])
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_user_password_and_database_come_from_the_url(acl_server: RedisServer) -> None:
    url = f"redis://alice:s3cret-pw@127.0.0.1:{acl_server.port}/3"
    async with RedisMemory(url=url) as memory:
        await memory.set("k", {"v": 1})
        assert await memory.get("k") == {"v": 1}
    for db, expected in ((3, 1), (0, 0)):
        raw = aioredis.Redis(port=acl_server.port, username="alice", password="s3cret-pw", db=db)
        try:
            assert await raw.exists("phpclaw:{default}:v:k") == expected
        finally:
            await raw.aclose()


async def test_a_wrong_password_fails_naming_the_host_but_not_the_secret(
    acl_server: RedisServer,
) -> None:
    url = f"redis://alice:wrong-s3cret@127.0.0.1:{acl_server.port}/0"
    async with RedisMemory(url=url, retries=0) as memory:
        with pytest.raises(DriverUnavailableError) as caught:
            await memory.get("k")
    message = str(caught.value)
    assert f"127.0.0.1:{acl_server.port}" in message
    for secret in ("wrong-s3cret", "redis://", "alice"):
        assert secret not in message


async def test_an_unreachable_server_fails_promptly_naming_only_the_host() -> None:
    port = free_port()
    url = f"redis://bob:t0p-secret@127.0.0.1:{port}/2"
    async with RedisMemory(url=url, connect_timeout=0.5, retries=2) as memory:
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: memory.get("k"), lambda: memory.set("k", 1), memory.all,
            lambda: memory.search("words"),
        ]
        for call in calls:
            started = time.monotonic()
            with pytest.raises(DriverUnavailableError) as caught:
                await call()
            # Refused at once; the retries' backoff is capped at one second each.
            assert time.monotonic() - started < 3 * 0.5 + 2 * 1.0
            message = str(caught.value)
            assert f"127.0.0.1:{port}" in message
            for secret in ("t0p-secret", "bob", "redis://"):
                assert secret not in message
            assert caught.value.driver == "redis"


async def test_url_comes_from_redis_url_when_not_given(
    private_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{private_server.port}/5")
    async with RedisMemory() as memory:
        await memory.set("k", "v")
    raw = aioredis.Redis(port=private_server.port, db=5)
    try:
        assert await raw.get("phpclaw:{default}:v:k") == b'"v"'
    finally:
        await raw.aclose()


async def test_the_default_url_is_the_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    async with RedisMemory() as memory:  # nothing is sent: the client connects on first use
        assert isinstance(memory.client, aioredis.Redis)
        options = memory.client.connection_pool.connection_kwargs
        assert (options["host"], options["port"], options.get("db", 0)) == ("127.0.0.1", 6379, 0)


async def test_a_client_passed_in_is_used_and_left_open(private_server: RedisServer) -> None:
    client = aioredis.Redis(port=private_server.port, decode_responses=True)
    try:
        async with RedisMemory(client, prefix="mine:") as memory:
            assert memory.client is client
            await memory.set("k", {"text": "decoded words"})
            assert await memory.get("k") == {"text": "decoded words"}
            assert await memory.all() == {"k": {"text": "decoded words"}}
            assert [h.key for h in await memory.search("decoded")] == ["k"]
        assert await client.get("mine:{default}:v:k") == '{"text":"decoded words"}'
    finally:
        await client.aclose()


async def test_a_client_built_from_a_url_is_closed_by_aclose(
    private_server: RedisServer,
) -> None:
    memory = RedisMemory(url=f"redis://127.0.0.1:{private_server.port}")
    await memory.set("k", 1)
    assert isinstance(memory.client, aioredis.Redis)
    pool = memory.client.connection_pool
    assert any(c.is_connected for c in pool._available_connections)
    await memory.aclose()
    assert not pool._in_use_connections
    assert not any(c.is_connected for c in pool._available_connections)


@pytest.mark.parametrize("timeout", [0, -1, True, "5", float("nan")])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout: object) -> None:
    with pytest.raises(ValueError, match="timeout"):
        RedisMemory(timeout=timeout)  # type: ignore[arg-type]


def test_a_client_and_a_url_together_are_refused() -> None:
    client = aioredis.Redis()
    with pytest.raises(ValueError, match="either"):
        RedisMemory(client, url="redis://127.0.0.1:6379")
    with pytest.raises(ValueError, match="either"):
        RedisMemory(client, ssl_ca_certs="/ca.pem")


def test_redis_is_imported_only_with_the_driver() -> None:
    code = (
        "import sys, claw_memory, claw_memory.drivers\n"
        "assert 'redis' not in sys.modules, 'redis imported by claw_memory'\n"
        "from claw_memory.drivers.redis import RedisMemory\n"
        "assert 'redis' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_without_redis_py_the_error_says_which_extra_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['redis'] = None\n"
        "import claw_memory\n"
        "try:\n"
        "    claw_memory.RedisMemory\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, timeout=60,
                          capture_output=True, text=True)
    assert "install claw-memory[redis]" in done.stdout
