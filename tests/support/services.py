"""Which services the tests can reach, and what they fall back to.

Under ``CI=true`` every service is required: a test that needs a missing one fails, it never
skips. On a developer's machine without services, Redis tests run on fakeredis and SQL tests on
SQLite, and the test summary says so.
"""

from __future__ import annotations

import functools
import os
import socket

import pytest

IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}

# The ports can be moved (e.g. to a closed port, to see the fallbacks at work).
REDIS_HOST, REDIS_PORT = "127.0.0.1", int(os.environ.get("CLAW_TEST_REDIS_PORT", "6379"))
POSTGRES_HOST = "127.0.0.1"
POSTGRES_PORT = int(os.environ.get("CLAW_TEST_POSTGRES_PORT", "5432"))
MARIADB_HOST = "127.0.0.1"
MARIADB_PORT = int(os.environ.get("CLAW_TEST_MARIADB_PORT", "3306"))

# What each service resolved to, for the terminal summary.
USED: dict[str, str] = {}


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@functools.cache
def redis_available() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@functools.cache
def postgres_available() -> bool:
    return port_open(POSTGRES_HOST, POSTGRES_PORT)


@functools.cache
def mariadb_available() -> bool:
    return port_open(MARIADB_HOST, MARIADB_PORT)


def require(service: str, available: bool, fallback: str | None) -> bool:
    """Whether the real ``service`` is usable; in CI a missing one fails the test.

    Outside CI, returns False so the caller uses ``fallback`` (recorded for the summary), or
    skips the test when there is no fallback.
    """
    if available:
        USED.setdefault(service, "real server")
        return True
    if IN_CI:
        pytest.fail(f"{service} is required under CI=true but is not reachable", pytrace=False)
    if fallback is None:
        USED[service] = "not reachable: tests skipped"
        pytest.skip(f"{service} not reachable (outside CI)")
    USED[service] = f"not reachable: fell back to {fallback}"
    return False
