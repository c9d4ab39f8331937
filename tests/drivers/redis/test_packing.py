"""Commands of a URL-built client are packed by hiredis: the same bytes as redis-py's packer."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
from redis.exceptions import DataError

from claw_memory.drivers.redis import RedisMemory, _packing_with_hiredis

arguments = st.lists(
    st.one_of(
        st.text(),  # any code point redis-py would encode as UTF-8, surrogates excluded
        st.binary(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
    ),
    max_size=8,
)


def _joined(chunks: Sequence[bytes | memoryview]) -> bytes:
    return b"".join(bytes(chunk) for chunk in chunks)


@given(name=st.sampled_from(["SET", "EVALSHA", "ZADD", b"GET"]), args=arguments)
def test_the_bytes_are_those_of_redis_pys_own_packer(
    name: str | bytes, args: list[str | bytes | int | float]
) -> None:
    stock = Connection()
    packing = _packing_with_hiredis(Connection)()
    assert _joined(packing.pack_command(name, *args)) == _joined(stock.pack_command(name, *args))


def test_large_values_and_memoryviews_pack_the_same() -> None:
    stock = Connection()
    packing = _packing_with_hiredis(Connection)()
    value = "é" * 100_000
    for args in (("SET", "k", value), ("SET", memoryview(b"k"), memoryview(value.encode()))):
        assert _joined(packing.pack_command(*args)) == _joined(stock.pack_command(*args))


def test_two_word_command_names_and_other_types_go_to_redis_pys_packer() -> None:
    stock = Connection()
    packing = _packing_with_hiredis(Connection)()
    for args in (("CONFIG GET", "maxmemory"), ("SET", bytearray(b"k"), "v")):
        assert _joined(packing.pack_command(*args)) == _joined(stock.pack_command(*args))
    for bad in (True, None, object()):
        with pytest.raises(DataError):
            packing.pack_command("SET", "k", bad)


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("redis://127.0.0.1:6379/0", Connection),
        ("rediss://127.0.0.1:6379/0", SSLConnection),
        ("unix:///tmp/redis.sock", UnixDomainSocketConnection),
    ],
)
async def test_every_scheme_keeps_its_connection_class_and_gains_the_packer(
    url: str, base: type[Connection]
) -> None:
    async with RedisMemory(url=url) as memory:  # nothing connects until the first command
        assert isinstance(memory.client, aioredis.Redis)
        made = memory.client.connection_pool.connection_class
        assert issubclass(made, base)
        assert made.pack_command is not base.pack_command


async def test_a_non_utf8_encoding_keeps_redis_pys_packer() -> None:
    async with RedisMemory(url="redis://127.0.0.1:6379/0", encoding="latin-1") as memory:
        assert isinstance(memory.client, aioredis.Redis)
        assert memory.client.connection_pool.connection_class is Connection
    async with RedisMemory(url="redis://127.0.0.1:6379/0", encoding="UTF8") as memory:
        assert isinstance(memory.client, aioredis.Redis)
        assert memory.client.connection_pool.connection_class is not Connection


async def test_a_connection_class_of_the_callers_own_is_kept() -> None:
    class Mine(Connection):
        pass

    async with RedisMemory(url="redis://127.0.0.1:6379/0", connection_class=Mine) as memory:
        assert isinstance(memory.client, aioredis.Redis)
        assert memory.client.connection_pool.connection_class is Mine


async def test_a_client_passed_in_is_not_changed() -> None:
    client = aioredis.Redis()
    try:
        async with RedisMemory(client):
            assert client.connection_pool.connection_class is Connection
    finally:
        await client.aclose()
