"""SqlMemory factories: ``sqlite`` always, ``postgres`` and ``mariadb`` on 127.0.0.1.

SQLite gets a fresh temporary file per factory call. For a server, the test run creates its
own database (``claw_test_<random>``) on first use and drops it when the session ends; each
factory call borrows a table prefix in it whose tables are emptied first, so it yields an
empty, isolated store without paying for DDL every time. Without a server, outside CI, the
server factories fall back to SQLite (``tests.support.services.require``).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, text
from sqlalchemy.ext.asyncio import create_async_engine

from claw_memory.contracts import Memory
from claw_memory.drivers.sql import SqlMemory
from tests.support.factories import MemoryFactory, factory
from tests.support.services import (
    MARIADB_HOST,
    MARIADB_PORT,
    POSTGRES_HOST,
    POSTGRES_PORT,
    mariadb_available,
    postgres_available,
    require,
)

POSTGRES_URL = f"postgresql+asyncpg://postgres@{POSTGRES_HOST}:{POSTGRES_PORT}/{{database}}"
MARIADB_URL = f"mysql+asyncmy://root@{MARIADB_HOST}:{MARIADB_PORT}/{{database}}"


def run_blocking(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine to completion on a private loop in another thread (from sync code)."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append((True, asyncio.run(make())))
        except BaseException as exc:
            outcome.append((False, exc))

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


class ServerDatabase:
    """A database of this test run on one server, and the table prefixes lent out in it."""

    def __init__(self, dialect: str, url: str, admin_database: str) -> None:
        self.dialect = dialect
        self.name = f"claw_test_{secrets.token_hex(4)}"
        self.url = url.format(database=self.name)
        self._admin_url = url.format(database=admin_database)
        self._created = False
        self._free: list[str] = []
        self._count = 0

    def ensure(self, config: pytest.Config) -> None:
        if not self._created:
            run_blocking(lambda: self._admin(f"CREATE DATABASE {self.name}"))
            self._created = True
            config.add_cleanup(self.drop)

    def drop(self) -> None:
        force = " WITH (FORCE)" if self.dialect == "postgresql" else ""
        run_blocking(lambda: self._admin(f"DROP DATABASE IF EXISTS {self.name}{force}"))
        self._created = False

    async def _admin(self, statement: str) -> None:
        engine = create_async_engine(self._admin_url, isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as conn:
                await conn.execute(text(statement))
        finally:
            await engine.dispose()

    def borrow(self) -> str:
        if self._free:
            return self._free.pop()
        self._count += 1
        return f"p{self._count}_"

    def give_back(self, prefix: str) -> None:
        self._free.append(prefix)


POSTGRES = ServerDatabase("postgresql", POSTGRES_URL, "test")
MARIADB = ServerDatabase("mariadb", MARIADB_URL, "test")


async def empty_tables(memory: SqlMemory) -> None:
    tables = memory.tables
    async with memory.engine.begin() as conn:
        for table in (tables.words, tables.memory, tables.messages, tables.conversations):
            await conn.execute(delete(table))


def sqlite_factory() -> MemoryFactory:
    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Memory]:
        with tempfile.TemporaryDirectory(prefix="claw-sql-") as directory:
            url = f"sqlite+aiosqlite:///{Path(directory) / 'memory.db'}"
            async with SqlMemory(url) as memory:
                yield memory

    return make


def server_factory(database: ServerDatabase, config: pytest.Config) -> MemoryFactory:
    database.ensure(config)

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Memory]:
        prefix = database.borrow()
        try:
            async with SqlMemory(database.url, table_prefix=prefix) as memory:
                await memory.create_schema()
                await empty_tables(memory)
                yield memory
        finally:
            database.give_back(prefix)

    return make


def sql_url(dialect: str, request: pytest.FixtureRequest, directory: Path) -> str:
    """A database URL for ``dialect``: this run's server database, or SQLite under ``directory``.

    Tests that use it directly pick table prefixes of their own.
    """
    if dialect == "postgresql" and require("postgresql", postgres_available(), "sqlite"):
        POSTGRES.ensure(request.config)
        return POSTGRES.url
    if dialect == "mariadb" and require("mariadb", mariadb_available(), "sqlite"):
        MARIADB.ensure(request.config)
        return MARIADB.url
    return f"sqlite+aiosqlite:///{directory / 'memory.db'}"


def sql_factory(dialect: str, request: pytest.FixtureRequest) -> MemoryFactory:
    """A factory for ``dialect`` (sqlite, postgresql, mariadb), falling back as the services say."""
    if dialect == "postgresql" and require("postgresql", postgres_available(), "sqlite"):
        return server_factory(POSTGRES, request.config)
    if dialect == "mariadb" and require("mariadb", mariadb_available(), "sqlite"):
        return server_factory(MARIADB, request.config)
    return sqlite_factory()


@factory("sqlite")
def _sqlite(request: pytest.FixtureRequest) -> MemoryFactory:
    return sqlite_factory()


@factory("postgres")
def _postgres(request: pytest.FixtureRequest) -> MemoryFactory:
    return sql_factory("postgresql", request)


@factory("mariadb")
def _mariadb(request: pytest.FixtureRequest) -> MemoryFactory:
    return sql_factory("mariadb", request)
