"""``RedisMemory``: memory in Redis or Redis Cluster, on ``redis.asyncio`` (hiredis when installed).

Layout (``docs/redis-layout.md`` has the whole picture). Every key of namespace ``ns`` is named
``<prefix>{ns}:…``, so one namespace lives in one cluster hash slot and never shares a key with
another (``a`` never sees ``a:b``):

* ``v:<key>`` — the value's compact JSON, expiring by Redis's own ``PX`` TTL (``get`` is one
  ``GET``).
* ``o`` — sorted set of key → recency (microseconds of the server clock, strictly growing): the
  order of ``all()``, the search tie-break and ``stored_at``.
* ``t:<word>``, ``i``, ``w`` — the search index: a set of keys per keyword, the words each key
  is indexed under, and the recency up to which the index is current. Like
  :class:`~claw_memory.scoring.KeywordIndex` it is brought up to date by the next ``search``:
  entries set since the mark go to the client once to be tokenised with
  :class:`~claw_memory.scoring.TokenOverlapScorer`, so ``set`` is one short script.

``set``, ``forget``, ``all``, ``flush`` and ``search`` are Lua scripts over one namespace's keys
(atomic, one round trip each, no ``MULTI``; a search after new sets takes one more, a flush one
per 500 entries); nothing ever walks the keyspace except :meth:`namespaces`, a maintenance
listing that uses ``SCAN``. Expired entries vanish from ``get`` natively and are
removed from the index by whichever of ``all``, ``search`` or ``set`` meets them first.

Every operation is idempotent (a repeated ``set`` leaves the same state, made newest again), so
connection errors (a refused or timed-out connect included) are retried by redis-py's ``Retry``
with jittered exponential backoff, and each command of a client built here runs under one
``asyncio.timeout``; past either, calls raise :class:`~claw_memory.errors.DriverUnavailableError`
naming the host and port only. A client passed in is used as it is (its own timeouts and
retries) and not closed; one built from a URL is owned and closed by :meth:`aclose`.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import json
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

try:
    from redis import asyncio as aioredis
    from redis import exceptions as redis_errors
    from redis.asyncio.cluster import RedisCluster
    from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.commands.core import AsyncScript
    from redis.utils import HIREDIS_AVAILABLE
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("RedisMemory needs redis-py: install claw-memory[redis]") from exc

from claw_memory.contracts import MemoryEntry, MemoryHit
from claw_memory.drivers import _redis_scripts as scripts
from claw_memory.drivers.base import MISSING, BaseMemory, RestoreItem
from claw_memory.errors import ClawMemoryError, CorruptStoreError
from claw_memory.hooks import Hooks
from claw_memory.scoring import TokenOverlapScorer
from claw_memory.validation import NamespaceValidator

__all__ = ["RedisMemory"]

DEFAULT_URL: Final = "redis://127.0.0.1:6379"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FLUSH_BATCH: Final = 500
_RESTORE_BATCH: Final = 500
# Entries handed to the client per round trip to be tokenised, and their total size.
_INDEX_BATCH: Final = 500
_INDEX_BYTES: Final = 1 << 20

_Arg = bytes | str | int
_unbounded = functools.partial(contextlib.nullcontext, None)
_STOCK_CONNECTIONS: Final = (Connection, SSLConnection, UnixDomainSocketConnection)
# json.loads(bytes) sniffs the encoding in Python first: decoding to str here is 2x faster.
_decode_json = json.JSONDecoder().decode
_keywords = TokenOverlapScorer.keywords


def _text(raw: bytes | str) -> str:
    return raw if isinstance(raw, str) else raw.decode()


def _utc(micros: bytes | str | int | float) -> datetime:
    return datetime.fromtimestamp(int(float(micros)) / 1e6, UTC)


class RedisMemory(BaseMemory):
    """Memory in Redis or Redis Cluster. Entries expire after ``default_ttl`` seconds (one
    day; ``0`` for never).

    Pass a ``redis.asyncio.Redis`` or ``RedisCluster`` as ``redis`` (left open), or a ``url``
    (else ``$REDIS_URL``, else ``redis://127.0.0.1:6379``): user name, password and database
    number come from it, ``rediss://`` verifies the server certificate (pass ``ssl_ca_certs``
    and the like as keyword options), and ``?cluster=true`` connects to a cluster. ``timeout``
    bounds each command and ``connect_timeout`` each connection attempt; ``retries`` counts the
    retries after a connection error (with jittered backoff of at most a second), so a server
    that is down fails within about ``(retries + 1) * connect_timeout + retries`` seconds (at
    once when the connection is refused), and no command, retries included, takes longer than
    ``timeout`` (``None``: unbounded). A client passed in keeps its own timeouts and retries.
    Other keyword options go to redis-py's ``from_url``. Needs Redis 6.2 or later.
    """

    driver_name = "redis"
    backend_errors = (redis_errors.RedisError, redis_errors.RedisClusterException, OSError)

    def __init__(
        self,
        redis: aioredis.Redis | RedisCluster | None = None,
        url: str | None = None,
        *,
        default_ttl: float | None = 86400,
        prefix: str = "phpclaw:",
        hooks: Hooks | None = None,
        timeout: float | None = 5.0,
        connect_timeout: float = 2.0,
        retries: int = 2,
        **client_options: Any,
    ) -> None:
        super().__init__(default_ttl=default_ttl, hooks=hooks)
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            # A brace in the prefix would change which part of the key Redis Cluster hashes.
            raise ValueError("prefix must be a str without '{' or '}'")
        if redis is not None and (url is not None or client_options):
            raise ValueError("pass either a client or a URL (with its options), not both")
        if timeout is not None and (
            timeout.__class__ is bool or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise ValueError("timeout must be a positive number of seconds or None")
        self._prefix = prefix
        self._owned = redis is None
        if redis is None:
            url = url or os.environ.get("REDIS_URL") or DEFAULT_URL
            self._where = _where_from_url(url)
            # No socket_timeout (redis-py's default is 5 s): with one, redis-py wraps every
            # write in asyncio.wait_for (a task and two more loop iterations per command) and
            # every read in a timeout. One asyncio.timeout around each command bounds the
            # whole call instead, its retries included.
            client_options.setdefault("socket_timeout", None)
            client_options.setdefault("socket_connect_timeout", connect_timeout)
            client_options.setdefault(
                "retry", Retry(ExponentialWithJitterBackoff(cap=1.0, base=0.05), retries)
            )
            client_options.setdefault(
                "retry_on_error", [redis_errors.ConnectionError, redis_errors.TimeoutError]
            )
            redis = _connect(url, client_options)
        else:
            self._where = _where_from_client(redis)
        # Each command of a client built here runs under ``timeout``; a client passed in keeps
        # its own timeouts (redis-py's default socket_timeout bounds each read and write).
        self._bound: Callable[[], contextlib.AbstractAsyncContextManager[Any]] = (
            functools.partial(asyncio.timeout, timeout) if self._owned and timeout is not None
            else _unbounded
        )
        self._redis = redis
        # redis-py's async RedisCluster discovers the cluster on its first command, and
        # concurrent first commands race there (a connection's writer is used before it
        # exists). The first operation initialises it once, under this lock.
        self._cluster_init: asyncio.Lock | None = (
            asyncio.Lock() if isinstance(redis, RedisCluster) else None
        )
        self._set_script = redis.register_script(scripts.SET)
        self._forget_script = redis.register_script(scripts.FORGET)
        self._all_script = redis.register_script(scripts.ALL)
        self._flush_script = redis.register_script(scripts.FLUSH)
        self._search_script = redis.register_script(scripts.SEARCH)
        self._entries_script = redis.register_script(scripts.ENTRIES)
        self._live_script = redis.register_script(scripts.LIVE)
        self._restore_script = redis.register_script(scripts.RESTORE)

    @property
    def client(self) -> aioredis.Redis | RedisCluster:
        """The redis-py client in use."""
        return self._redis

    def describe_error(self, exc: BaseException) -> str:
        return f"{type(exc).__name__} talking to {self._where}"

    def _unavailable(self, op: str, namespace: str | None, exc: BaseException) -> ClawMemoryError:
        if isinstance(exc, redis_errors.ResponseError) and str(exc).startswith("WRONGTYPE"):
            return CorruptStoreError(
                f"redis memory could not {op}: a key of namespace {namespace!r} holds data of "
                "another type (is another application using the same prefix?)",
                namespace=namespace,
            )
        return super()._unavailable(op, namespace, exc)

    def _recency(self, namespace: str) -> str:
        """The namespace's recency set: the key every script is called with."""
        return f"{self._prefix}{{{namespace}}}:o"

    def _decode(self, namespace: str, raw: bytes | str) -> Any:
        try:
            return _decode_json(_text(raw))
        except ValueError:  # UnicodeDecodeError included
            raise _corrupt(namespace) from None

    async def _initialize_cluster(self) -> None:
        lock = self._cluster_init
        if lock is None:
            return
        async with lock:
            if self._cluster_init is not None:
                async with self._bound():
                    await cast(RedisCluster, self._redis).initialize()
                self._cluster_init = None

    async def _run(self, script: AsyncScript, *args: _Arg, keys: int = 1) -> Any:
        """Run ``script`` by its SHA: one round trip, with the fewest arguments to encode."""
        if self._cluster_init is not None:
            await self._initialize_cluster()
        async with self._bound():
            try:
                return await self._redis.evalsha(script.sha, keys, *args)
            except redis_errors.NoScriptError:
                # The server lost its script cache (a restart, SCRIPT FLUSH): load it again.
                return await script(keys=cast("list[str]", args[:keys]), args=args[keys:])

    # -- BaseMemory's hooks ------------------------------------------------------------------
    async def _get(self, namespace: str, key: str) -> Any:
        if self._cluster_init is not None:
            await self._initialize_cluster()
        async with self._bound():
            raw = await self._redis.get(f"{self._prefix}{{{namespace}}}:v:{key}")
        if raw is None:
            return MISSING
        try:
            return _decode_json(raw.decode() if isinstance(raw, bytes) else raw)
        except ValueError:  # UnicodeDecodeError included
            raise _corrupt(namespace) from None

    async def _has(self, namespace: str, key: str) -> bool:
        if self._cluster_init is not None:
            await self._initialize_cluster()
        async with self._bound():
            return bool(await self._redis.exists(f"{self._prefix}{{{namespace}}}:v:{key}"))

    async def _set(
        self, namespace: str, key: str, value: Any, encoded: str, ttl: float | None
    ) -> None:
        # The value key is built in the script from the recency key: one argument fewer.
        recency = f"{self._prefix}{{{namespace}}}:o"
        args: tuple[_Arg, ...] = (
            (recency, key, encoded) if ttl is None
            else (recency, key, encoded, max(1, round(ttl * 1000)))
        )
        if self._cluster_init is not None:
            await self._initialize_cluster()
        # _run, inlined: a set is the cheapest script, so its call overhead shows most.
        async with self._bound():
            try:
                await self._redis.evalsha(self._set_script.sha, 1, *args)
            except redis_errors.NoScriptError:
                await self._set_script(keys=[recency], args=args[1:])

    async def _forget(self, namespace: str, key: str) -> None:
        await self._run(self._forget_script, self._recency(namespace), key)

    async def _flush(self, namespace: str) -> None:
        recency = self._recency(namespace)
        upto: bytes | str = ""
        more = 1
        while more:
            more, upto = await self._run(self._flush_script, recency, upto, _FLUSH_BATCH)

    async def _all(self, namespace: str) -> dict[str, Any]:
        reply = await self._run(self._all_script, self._recency(namespace))
        return {
            _text(reply[j]): self._decode(namespace, reply[j + 1]) for j in range(0, len(reply), 2)
        }

    async def _search(self, namespace: str, query: str, limit: int) -> list[MemoryHit]:
        words = _keywords(query)
        if not words:
            return []
        head: list[_Arg] = [self._recency(namespace), limit, _INDEX_BATCH, _INDEX_BYTES,
                            len(words), *words]
        indexed: list[_Arg] = []
        while True:
            reply = await self._run(self._search_script, *head, *indexed)
            if reply[0] == 1:
                break
            # Entries not indexed yet: tokenise them here (Redis cannot case-fold Unicode)
            # and send their words with the next call, which also answers the query.
            indexed = []
            for j in range(1, len(reply), 3):
                raw = reply[j + 2]
                text = _text(raw)
                if text[:1] == '"':  # a str value is scored on itself, not its JSON
                    text = self._decode(namespace, text)
                indexed += [reply[j], reply[j + 1], " ".join(_keywords(text))]
        return [
            MemoryHit(
                _text(reply[j]),
                self._decode(namespace, reply[j + 1]),
                namespace,
                float(reply[j + 2]),
                _utc(reply[j + 3]),
            )
            for j in range(1, len(reply), 4)
        ]

    # -- listing (maintenance) ---------------------------------------------------------------
    async def namespaces(self) -> list[str]:
        """Every namespace with a live entry under this prefix, sorted.

        This is the one operation that walks the keyspace (``SCAN`` for ``<prefix>{*}:o``), so
        it is meant for export and inspection, not for a request path.
        """
        pattern = _glob_escape(self._prefix) + "{*}:o"
        start = len(self._prefix) + 1
        found: set[str] = set()
        try:
            await self._initialize_cluster()
            names = aiter(self._redis.scan_iter(match=pattern, count=1000))
            while True:
                async with self._bound():  # each SCAN call, not the walk
                    name = await anext(names, None)
                if name is None:
                    break
                namespace = _text(name)[start:-3]
                try:
                    NamespaceValidator.validate(namespace)
                except ClawMemoryError:
                    continue
                if await self._run(self._live_script, self._recency(namespace)):
                    found.add(namespace)
        except self.backend_errors as exc:
            raise self._unavailable("list namespaces", None, exc) from exc
        return sorted(found)

    async def entries(self, namespace: str = "default") -> list[MemoryEntry]:
        """The live entries of ``namespace`` with their times, oldest stored first."""
        NamespaceValidator.validate(namespace)
        try:
            reply = await self._run(self._entries_script, self._recency(namespace))
        except self.backend_errors as exc:
            raise self._unavailable("list entries", namespace, exc) from exc
        return [
            MemoryEntry(
                _text(reply[j]),
                self._decode(namespace, reply[j + 1]),
                namespace,
                _utc(reply[j + 2]),
                None if int(reply[j + 3]) < 0
                else datetime.fromtimestamp(int(reply[j + 3]) / 1000, UTC),
            )
            for j in range(1, len(reply), 4)
        ]

    async def _restore(self, items: Sequence[RestoreItem]) -> None:
        # One script call per run of one namespace (one hash slot), in batches.
        start = 0
        while start < len(items):
            namespace = items[start].namespace
            end = start
            while (
                end < len(items) and items[end].namespace == namespace
                and end - start < _RESTORE_BATCH
            ):
                end += 1
            args: list[_Arg] = []
            for item in items[start:end]:
                at = 0 if item.expires_at is None else max(1, round(item.expires_at * 1000))
                args += [item.key, item.encoded, at]
            await self._run(self._restore_script, self._recency(namespace), *args)
            start = end

    async def aclose(self) -> None:
        """Close the client if this instance built it from a URL; a client passed in stays open."""
        if self._owned:
            await self._redis.aclose()


def _corrupt(namespace: str) -> CorruptStoreError:
    return CorruptStoreError(
        f"redis memory holds a value that is not JSON in namespace {namespace!r}",
        namespace=namespace,
    )


def _connect(url: str, options: dict[str, Any]) -> aioredis.Redis | RedisCluster:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    cluster = any(name == "cluster" and value.lower() in _TRUE for name, value in query)
    rest = urlencode([(name, value) for name, value in query if name != "cluster"])
    url = urlunsplit(parts._replace(query=rest))
    if cluster:
        return RedisCluster.from_url(url, **options)
    client = aioredis.Redis.from_url(url, **options)
    pool = client.connection_pool
    settings = pool.connection_kwargs
    if (
        HIREDIS_AVAILABLE
        and pool.connection_class in _STOCK_CONNECTIONS  # not a class of the caller's own
        and _is_utf8(settings.get("encoding", "utf-8"))
        and settings.get("encoding_errors", "strict") == "strict"
    ):
        # The pool makes its connections on first use, so none exists yet.
        pool.connection_class = _packing_with_hiredis(cast(Any, pool.connection_class))
    return client


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:  # redis-py reports an unknown encoding at the first command
        return False


@functools.cache
def _packing_with_hiredis(base: type[Any]) -> type[Any]:
    """``base`` (a redis.asyncio connection class) packing commands with hiredis's C packer.

    redis-py's async connections pack every command in Python, its sync ones with hiredis when
    it is installed; on a set script's seven arguments this is several microseconds a call.
    The result is the same bytes for what the packer takes (``str`` as UTF-8, ``bytes``,
    ``int``, ``float``); anything else, and command names of two words (``CONFIG GET``), goes
    to redis-py's own packer, which also raises its usual errors.
    """
    from hiredis import pack_command as pack

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        first = args[0]
        if first.__class__ is str and " " not in first:
            try:
                return [pack(args)]
            except TypeError:
                pass
        return cast("list[bytes]", base.pack_command(self, *args))

    return type(f"HiredisPacking{base.__name__}", (base,),
                {"pack_command": pack_command, "__module__": __name__})


def _where_from_url(url: str) -> str:
    """``host:port`` of a Redis URL, never its user name, password or query."""
    try:
        parts = urlsplit(url)
        if parts.scheme == "unix":
            return "a unix socket"
        return f"{parts.hostname or '127.0.0.1'}:{parts.port or 6379}"
    except ValueError:
        return "redis"


def _where_from_client(client: Any) -> str:
    try:
        options = client.connection_pool.connection_kwargs
        if "path" in options:
            return "a unix socket"
        return f"{options.get('host', '127.0.0.1')}:{options.get('port', 6379)}"
    except AttributeError:
        pass
    try:  # RedisCluster: the first node it was given, as "host:port"
        return str(next(iter(client.nodes_manager.startup_nodes)))
    except (AttributeError, StopIteration):
        return "redis"


def _glob_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)
