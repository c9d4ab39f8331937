"""``rediss://``: RedisMemory verifies the server's certificate."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from claw_memory.drivers.redis import RedisMemory
from claw_memory.errors import DriverUnavailableError
from tests.drivers.redis.servers import RedisServer


class TlsServer:
    def __init__(self, server: RedisServer, ca_file: Path, other_ca_file: Path) -> None:
        self.server = server
        self.ca_file = ca_file
        self.other_ca_file = other_ca_file

    @property
    def url(self) -> str:
        return f"rediss://127.0.0.1:{self.server.port}/0"


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[TlsServer]:
    """A Redis answering TLS only, with a certificate for 127.0.0.1 from a CA made here."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    files = tmp_path / "tls"
    files.mkdir()
    ca.cert_pem.write_to_path(str(files / "ca.pem"))
    cert.private_key_pem.write_to_path(str(files / "server.key"))
    cert.cert_chain_pems[0].write_to_path(str(files / "server.pem"))
    trustme.CA().cert_pem.write_to_path(str(files / "other-ca.pem"))
    client_context = ssl.create_default_context(cafile=str(files / "ca.pem"))
    server = RedisServer(files, tls=client_context, args=[
        "--tls-cert-file", str(files / "server.pem"),
        "--tls-key-file", str(files / "server.key"),
        "--tls-ca-cert-file", str(files / "ca.pem"),
        "--tls-auth-clients", "no",
    ])
    server.start()
    try:
        yield TlsServer(server, files / "ca.pem", files / "other-ca.pem")
    finally:
        server.stop()


async def test_tls_connects_when_the_ca_is_given(tls_server: TlsServer) -> None:
    async with RedisMemory(url=tls_server.url, ssl_ca_certs=str(tls_server.ca_file)) as memory:
        await memory.set("k", {"secret": "words"})
        assert await memory.get("k") == {"secret": "words"}
        assert [h.key for h in await memory.search("words")] == ["k"]


@pytest.mark.parametrize("ca", ["none", "other"])
async def test_tls_refuses_a_server_it_cannot_verify(tls_server: TlsServer, ca: str) -> None:
    options: dict[str, Any] = (
        {} if ca == "none" else {"ssl_ca_certs": str(tls_server.other_ca_file)})
    async with RedisMemory(url=tls_server.url, retries=0, **options) as memory:
        with pytest.raises(DriverUnavailableError) as caught:
            await memory.set("k", 1)
    assert f"127.0.0.1:{tls_server.server.port}" in str(caught.value)
    assert isinstance(caught.value.__cause__, Exception)
    assert "CERTIFICATE_VERIFY_FAILED" in repr(caught.value.__cause__) or "certificate" in str(
        caught.value.__cause__).lower()
