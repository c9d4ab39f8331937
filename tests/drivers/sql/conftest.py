"""Fixtures of the SqlMemory tests: every test runs on SQLite, PostgreSQL and MariaDB.

Without a server (outside CI) the server variants fall back to SQLite, as the conformance
factories do.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from sqlalchemy import event

from claw_memory.drivers.sql import SqlMemory
from tests.support.drivers_sql import sql_factory, sql_url
from tests.support.factories import MemoryFactory

DIALECTS = ["sqlite", "postgresql", "mariadb"]


@pytest.fixture(params=DIALECTS)
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sql_memory_factory(dialect: str, request: pytest.FixtureRequest) -> MemoryFactory:
    return sql_factory(dialect, request)


@pytest.fixture
async def memory(sql_memory_factory: MemoryFactory) -> AsyncIterator[SqlMemory]:
    async with sql_memory_factory() as memory:
        assert isinstance(memory, SqlMemory)
        yield memory


@pytest.fixture
def database_url(dialect: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return sql_url(dialect, request, tmp_path)


@pytest.fixture
def fresh_prefix() -> str:
    """A table prefix no other test uses (the run's database is dropped at the end)."""
    return f"t{secrets.token_hex(4)}_"


class StatementLog:
    """The SQL statements an engine sent, with the rows each wrote.

    Rows are the parameter sets of an executemany (some drivers report no rowcount for
    those), else the cursor's rowcount.
    """

    def __init__(self) -> None:
        self.statements: list[tuple[str, int]] = []

    def __call__(self, conn: object, cursor: object, statement: str, parameters: object,
                 context: object, executemany: bool) -> None:
        if executemany and isinstance(parameters, (list, tuple)):
            rows = len(parameters)
        else:
            rows = getattr(cursor, "rowcount", -1)
        self.statements.append((" ".join(statement.split()), rows))

    def clear(self) -> None:
        self.statements.clear()

    def matching(self, prefix: str, table: str) -> list[tuple[str, int]]:
        return [
            (sql, rows) for sql, rows in self.statements
            if sql.upper().startswith(prefix) and table in sql
        ]


@pytest.fixture
def statement_log(memory: SqlMemory) -> Callable[[], StatementLog]:
    def attach() -> StatementLog:
        log = StatementLog()
        event.listen(memory.engine.sync_engine, "after_cursor_execute", log)
        return log

    return attach
