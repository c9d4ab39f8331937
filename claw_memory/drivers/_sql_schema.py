"""The tables of :class:`~claw_memory.drivers.sql.SqlMemory` and their versioned migrations.

``build_tables(prefix)`` describes the current schema; :func:`migrate` brings a database to
it one recorded step at a time, so a database created by an earlier release upgrades in place.
The layout and the reasons for each column type are in ``docs/sql-schema.md``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    DateTime,
    Dialect,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    and_,
    bindparam,
    delete,
    func,
    insert,
    inspect,
    literal,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.schema import CreateColumn, CreateIndex
from sqlalchemy.sql.expression import UnaryExpression
from sqlalchemy.sql.operators import custom_op
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = ["LATEST_VERSION", "Statements", "Tables", "build_tables", "migrate"]

LATEST_VERSION: Final = 2
MYSQL: Final = ("mysql", "mariadb")


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in Python; TIMESTAMPTZ on PostgreSQL, DATETIME(6) in UTC elsewhere."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in MYSQL:
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(DateTime(timezone=dialect.name == "postgresql"))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and dialect.name != "postgresql":
            return value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


def _exact(length: int) -> TypeEngine[str]:
    # Compared byte for byte, so ORDER BY matches Python's str order and "a" != "A" != "a ".
    # MySQL/MariaDB get the same from the table's binary, no-pad collation.
    return String(length).with_variant(postgresql.VARCHAR(length, collation="C"), "postgresql")


_LONG_TEXT: Final = Text().with_variant(mysql.LONGTEXT(), *MYSQL)
_JSON: Final = JSON(none_as_null=True).with_variant(
    postgresql.JSONB(none_as_null=True), "postgresql"
)


@dataclass(frozen=True, slots=True)
class Tables:
    metadata: MetaData
    migrations: Table
    memory: Table
    words: Table
    conversations: Table
    messages: Table


def _table_options(mysql_collation: str) -> dict[str, Any]:
    options = {"charset": "utf8mb4", "collate": mysql_collation, "engine": "InnoDB"}
    return {f"{dialect}_{name}": value for dialect in MYSQL for name, value in options.items()}


def build_tables(
    prefix: str = "", version: int = LATEST_VERSION, mysql_collation: str = "utf8mb4_bin"
) -> Tables:
    """The tables as they are at schema ``version`` (the latest unless migrating)."""
    md = MetaData()
    opts = _table_options(mysql_collation)
    v2 = version >= 2

    migrations = Table(
        f"{prefix}phpclaw_migrations", md,
        Column("version", Integer, primary_key=True, autoincrement=False),
        Column("applied_at", UtcDateTime, nullable=False),
        **opts,
    )
    memory = Table(
        f"{prefix}phpclaw_memory", md,
        Column("namespace", _exact(100), nullable=False),
        Column("key", _exact(255), nullable=False),
        Column("value", _LONG_TEXT, nullable=False),
        Column("seq", BigInteger, nullable=False),
        Column("expires_at", UtcDateTime, nullable=True),
        Column("created_at", UtcDateTime, nullable=False),
        Column("updated_at", UtcDateTime, nullable=False),
        PrimaryKeyConstraint("namespace", "key"),
        Index(f"{prefix}phpclaw_memory_recency", "namespace", "seq"),
        Index(f"{prefix}phpclaw_memory_expiry", "expires_at"),
        **opts,
    )
    conversations = Table(
        f"{prefix}phpclaw_conversations", md,
        Column("id", _exact(26), primary_key=True),
        Column("title", Text, nullable=True),
        Column("metadata", _JSON, nullable=True),
        Column("document", _LONG_TEXT, nullable=False),
        Column("seq", BigInteger, nullable=False),
        Column("created_at", UtcDateTime, nullable=False),
        Column("updated_at", UtcDateTime, nullable=False),
        Index(f"{prefix}phpclaw_conversations_recency", "seq"),
        **opts,
    )
    messages = Table(
        f"{prefix}phpclaw_messages", md,
        Column("conversation_id", _exact(26), nullable=False),
        Column("position", Integer, nullable=False, autoincrement=False),
        Column("id", _exact(26), nullable=False),
        Column("role", String(16), nullable=False),
        Column("content", _LONG_TEXT, nullable=True),
        Column("name", Text, nullable=True),
        Column("tool_call_id", Text, nullable=True),
        Column("tool_calls", _JSON, nullable=True),
        Column("document", _LONG_TEXT, nullable=False),
        Column("created_at", UtcDateTime, nullable=False),
        PrimaryKeyConstraint("conversation_id", "position"),
        ForeignKeyConstraint(
            ["conversation_id"], [conversations.c.id], ondelete="CASCADE",
            name=f"{prefix}phpclaw_messages_conversation_fk",
        ),
        Index(f"{prefix}phpclaw_messages_id", "id"),
        **opts,
    )
    words = Table(
        f"{prefix}phpclaw_memory_words", md,
        Column("namespace", _exact(100), nullable=False),
        Column("word", _exact(100), nullable=False),
        Column("key", _exact(255), nullable=False),
        PrimaryKeyConstraint("namespace", "word", "key"),
        Index(f"{prefix}phpclaw_memory_words_key", "namespace", "key"),
        **opts,
    )
    if v2:
        # 0 = keywords not yet in the words table, 1 = indexed, 2 = being indexed (in a txn).
        memory.append_column(
            Column("index_state", SmallInteger, nullable=False, server_default=text("0"))
        )
        Index(f"{prefix}phpclaw_memory_stale", memory.c.namespace, memory.c.index_state)
        conversations.append_column(Column("expires_at", UtcDateTime, nullable=True))
        conversations.append_column(
            Column("message_count", Integer, nullable=False, server_default=text("0"))
        )
        conversations.append_column(Column("messages_digest", String(64), nullable=True))
        Index(f"{prefix}phpclaw_conversations_expiry", conversations.c.expires_at)
    else:
        md.remove(words)
    return Tables(md, migrations, memory, words, conversations, messages)


# -- migrations -------------------------------------------------------------------------------

def _v1(conn: Connection, prefix: str, collation: str) -> None:
    """The three tables of the original design."""
    old = build_tables(prefix, 1, collation)
    old.metadata.create_all(
        conn, tables=[old.memory, old.conversations, old.messages], checkfirst=True
    )


def _v2(conn: Connection, prefix: str, collation: str) -> None:
    """SQL-side search (keyword table, stale marker), conversation TTL and append-only saves."""
    new = build_tables(prefix, 2, collation)
    inspector = inspect(conn)
    for table, names in (
        (new.memory, ["index_state"]),
        (new.conversations, ["expires_at", "message_count", "messages_digest"]),
    ):
        present = {c["name"] for c in inspector.get_columns(table.name)}
        indexes = {i["name"] for i in inspector.get_indexes(table.name)}
        for name in names:
            if name not in present:
                spec = CreateColumn(table.c[name]).compile(dialect=conn.dialect)
                quoted = conn.dialect.identifier_preparer.format_table(table)
                conn.execute(text(f"ALTER TABLE {quoted} ADD {spec}"))
        for index in table.indexes:
            if index.name not in indexes and any(c.name in names for c in index.columns):
                conn.execute(CreateIndex(index))
    new.words.create(conn, checkfirst=True)


_STEPS: Final[list[tuple[int, Callable[[Connection, str, str], None]]]] = [(1, _v1), (2, _v2)]


def _mysql_collation(dialect: Dialect) -> str:
    # Binary and NO PAD: "a" and "a " are two keys, ordered like Python strings.
    return "utf8mb4_nopad_bin" if getattr(dialect, "is_mariadb", False) else "utf8mb4_0900_bin"


def migrate(conn: Connection, prefix: str, target: int = LATEST_VERSION) -> int:
    """Apply the missing steps up to ``target`` (run with ``AsyncConnection.run_sync``).

    Returns the version the database is at. Steps are idempotent, and a lock (SQLite's write
    lock, a PostgreSQL advisory lock, MySQL's GET_LOCK) makes two processes starting together
    migrate once. Runs in the caller's transaction (DDL is transactional but on MySQL).
    """
    dialect = conn.dialect
    lock_name = f"{prefix}phpclaw_migrations"
    if dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock, before looking at anything
    elif dialect.name == "postgresql":
        conn.execute(
            text("SELECT pg_advisory_xact_lock(:id)"), {"id": zlib.crc32(lock_name.encode())}
        )
    elif dialect.name in MYSQL:
        conn.execute(text("SELECT GET_LOCK(:name, 60)"), {"name": lock_name[:64]})
    try:
        collation = _mysql_collation(dialect)
        tables = build_tables(prefix, target, collation)
        tables.migrations.create(conn, checkfirst=True)
        done = set(conn.execute(select(tables.migrations.c.version)).scalars())
        for version, step in _STEPS:
            if version <= target and version not in done:
                step(conn, prefix, collation)
                conn.execute(
                    tables.migrations.insert().values(version=version, applied_at=datetime.now(UTC))
                )
                done.add(version)
        return max(done, default=0)
    finally:
        if dialect.name in MYSQL:
            conn.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": lock_name[:64]})


class Statements:
    """The prebuilt statements of SqlMemory's ``phpclaw_memory`` and words tables.

    Built once per driver, so each call only binds parameters (and SQLAlchemy's compiled
    cache finds the statement at once).
    """

    def __init__(self, tables: Tables, dialect: str) -> None:
        m, w = tables.memory, tables.words
        ns, key = m.c.namespace == bindparam("ns"), m.c.key == bindparam("key")
        live = or_(m.c.expires_at.is_(None), m.c.expires_at > bindparam("now"))
        self.get = select(m.c.value).where(ns, key, live)
        self.has = select(literal(1)).select_from(m).where(ns, key, live)
        self.all = select(m.c.key, m.c.value).where(ns, live).order_by(m.c.seq)
        self.entries = (
            select(m.c.key, m.c.value, m.c.updated_at, m.c.expires_at)
            .where(ns, live).order_by(m.c.seq)
        )
        self.namespaces = select(m.c.namespace).where(live).distinct()
        self.upsert = _upsert(dialect, m)
        self.forget = (
            delete(m).where(ns, key),
            delete(w).where(w.c.namespace == bindparam("ns"), w.c.key == bindparam("key")),
        )
        self.flush = (delete(m).where(ns), delete(w).where(w.c.namespace == bindparam("ns")))
        self.stale = select(m.c.key).where(ns, m.c.index_state == 0).limit(1)
        self.claim = update(m).where(ns, m.c.index_state == 0).values(index_state=2)
        self.claimed = select(m.c.key, m.c.value).where(ns, m.c.index_state == 2)
        self.indexed = update(m).where(ns, m.c.index_state == 2).values(index_state=1)
        self.unindex = delete(w).where(
            w.c.namespace == bindparam("ns"), w.c.key.in_(bindparam("keys", expanding=True))
        )
        self.insert_words = insert(w)
        # On SQLite, "+key" keeps the planner from walking the (namespace, key) index in
        # key order over every word of the namespace: it looks the query words up instead.
        group: Any = w.c.key
        if dialect == "sqlite":
            group = UnaryExpression(w.c.key, operator=custom_op("+"))
        hits = (
            select(w.c.key, func.count().label("score"))
            .where(w.c.namespace == bindparam("ns"),
                   w.c.word.in_(bindparam("words", expanding=True)))
            .group_by(group)
            .subquery("hits")
        )
        self.search = (
            select(m.c.key, m.c.value, m.c.updated_at, hits.c.score)
            .select_from(hits.join(m, and_(ns, m.c.key == hits.c.key)))
            .where(live)
            .order_by(hits.c.score.desc(), m.c.seq.desc(), m.c.key)
            .limit(bindparam("limit"))
        )
        self.expired = (
            delete(w).where(
                select(literal(1))
                .where(m.c.namespace == w.c.namespace, m.c.key == w.c.key,
                       m.c.expires_at <= bindparam("now"))
                .exists()
            ),
            delete(m).where(m.c.expires_at <= bindparam("now")),
        )


def _upsert(dialect: str, table: Any) -> Any:
    values = {
        "namespace": bindparam("ns"), "key": bindparam("key"), "value": bindparam("value"),
        "seq": bindparam("seq"), "index_state": 0, "expires_at": bindparam("exp"),
        "created_at": bindparam("now"), "updated_at": bindparam("now"),
    }
    changed = ("value", "seq", "index_state", "expires_at", "updated_at")
    if dialect in MYSQL:
        mine = mysql.insert(table).values(values)
        return mine.on_duplicate_key_update({c: mine.inserted[c] for c in changed})
    ins = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table).values(values)
    return ins.on_conflict_do_update(
        index_elements=["namespace", "key"], set_={c: ins.excluded[c] for c in changed}
    )
