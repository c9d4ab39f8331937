"""Redis servers the tests start themselves: on free loopback ports, stopped by PID.

They need ``redis-server`` and ``redis-cli`` on PATH. Under ``CI=true`` a missing binary fails
the test; elsewhere the test is skipped. Readiness is polled with a deadline, never slept for.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support.services import IN_CI

HOST = "127.0.0.1"
START_DEADLINE = 15.0


def require_binaries() -> None:
    """Fail (under CI) or skip unless ``redis-server`` and ``redis-cli`` are on PATH."""
    if shutil.which("redis-server") and shutil.which("redis-cli"):
        return
    if IN_CI:
        pytest.fail("redis-server and redis-cli are required under CI=true", pytrace=False)
    pytest.skip("redis-server or redis-cli is not on PATH")


def free_port(with_bus: bool = False) -> int:
    """A free loopback port (and, for a cluster node, its bus port + 10000 free too)."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if not with_bus:
            return port
        if port + 10000 < 65536 and _can_bind(port + 10000):
            return port
    raise RuntimeError("no free port pair found")


def _can_bind(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _ping(port: int, tls: ssl.SSLContext | None = None) -> bytes:
    with socket.create_connection((HOST, port), timeout=1.0) as raw:
        sock = tls.wrap_socket(raw, server_hostname=HOST) if tls else raw
        sock.sendall(b"PING\r\n")
        return sock.recv(64)


def _cluster_state_ok(port: int) -> bool:
    with socket.create_connection((HOST, port), timeout=2.0) as sock:
        sock.sendall(b"CLUSTER INFO\r\n")
        return b"cluster_state:ok" in sock.recv(65536)


class RedisServer:
    """One ``redis-server`` process on its own port and directory; ``stop`` kills it by PID."""

    def __init__(
        self,
        directory: Path,
        *,
        port: int | None = None,
        tls: ssl.SSLContext | None = None,
        args: Sequence[str] = (),
    ) -> None:
        """``args`` are extra ``redis-server`` arguments; they override the defaults."""
        self.directory = directory
        self.port = port or free_port()
        self.tls = tls
        listen = ["--port", str(self.port)] if tls is None else [
            "--port", "0", "--tls-port", str(self.port)]
        self.args = [*listen, "--bind", HOST, "--save", "", "--appendonly", "no", *args]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def start(self) -> None:
        require_binaries()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            ["redis-server", "--dir", str(self.directory),
             "--logfile", str(self.directory / f"redis-{self.port}.log"), *self.args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + START_DEADLINE
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server on port {self.port} exited: {self._log_tail()}")
            with contextlib.suppress(OSError):
                reply = _ping(self.port, self.tls)
                if reply.startswith((b"+PONG", b"-NOAUTH", b"-NOPERM")):
                    return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server on port {self.port} did not answer in time")
            time.sleep(0.02)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Send ``sig`` to the server's PID and wait for it to exit (SIGKILL after 10 s)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, sig)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def _log_tail(self) -> str:
        log = self.directory / f"redis-{self.port}.log"
        return log.read_text(errors="replace")[-500:] if log.exists() else "(no log)"


class RedisClusterServers:
    """Three masters joined with ``redis-cli --cluster create``; ``url`` says ``cluster=true``."""

    def __init__(self, directory: Path) -> None:
        self.nodes: list[RedisServer] = []
        for _ in range(3):
            port = free_port(with_bus=True)
            self.nodes.append(RedisServer(directory / str(port), port=port, args=[
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "5000",
            ]))

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.nodes[0].port}/0?cluster=true"

    def start(self) -> None:
        try:
            for node in self.nodes:
                node.start()
            subprocess.run(
                ["redis-cli", "--cluster", "create",
                 *(f"{HOST}:{node.port}" for node in self.nodes),
                 "--cluster-replicas", "0", "--cluster-yes"],
                check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
            )
            deadline = time.monotonic() + START_DEADLINE
            while not all(_cluster_state_ok(node.port) for node in self.nodes):
                if time.monotonic() > deadline:
                    raise RuntimeError("the test cluster did not reach cluster_state:ok")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


_shared_cluster: RedisClusterServers | None = None


def shared_cluster(config: pytest.Config) -> RedisClusterServers:
    """The test session's cluster: started on first use, stopped when the session ends."""
    global _shared_cluster
    if _shared_cluster is None:
        require_binaries()
        directory = Path(tempfile.mkdtemp(prefix="claw-redis-cluster-"))
        cluster = RedisClusterServers(directory)
        try:
            cluster.start()
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise

        def stop() -> None:
            global _shared_cluster
            _shared_cluster = None
            cluster.stop()
            shutil.rmtree(directory, ignore_errors=True)

        config.add_cleanup(stop)
        _shared_cluster = cluster
    return _shared_cluster
