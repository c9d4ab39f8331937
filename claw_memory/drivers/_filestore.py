"""The on-disk half of :class:`~claw_memory.drivers.file.FileMemory`.

File names, the record format, the cross-process lock, journal replay, torn-tail recovery and
compaction. Every :class:`Store` method is blocking and runs in a worker thread, one call per
locked operation; :meth:`Space.unchanged` is the one stat the driver makes in the event loop to
validate its cache. The layout is described in ``docs/file-layout.md``.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import json
import os
import secrets
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, Final

from claw_memory.errors import CorruptStoreError, InvalidNamespaceError
from claw_memory.scoring import KeywordIndex
from claw_memory.validation import NamespaceValidator, encode_json

__all__ = ["Entry", "Space", "Store", "Write", "decode_namespace", "encode_namespace"]

FORMAT_VERSION: Final = 1
PREFIX: Final = "ns-"
SNAPSHOT: Final = ".snapshot.jsonl"
JOURNAL: Final = ".journal.jsonl"
LOCK: Final = ".lock"
TMP: Final = ".tmp"

# An entry: (value, or its JSON text for a list/dict; is_json; stored_at and expires_at as UNIX
# times; sequence number, higher = stored more recently).
Entry = tuple[Any, bool, float, float | None, int]
Record = dict[str, Any]
# A set to write: (key, value as an Entry keeps it, is_json, JSON text, expires_at as a UNIX
# time or None).
Write = tuple[str, Any, bool, str, float | None]

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_encode_ascii = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_loads = json.loads
_time = time.time
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_SYMLINK_ERRNOS: Final = (errno.ELOOP, errno.EMLINK)

_FULLFSYNC: Final[int | None] = getattr(fcntl, "F_FULLFSYNC", None)
_fdatasync: Final[Callable[[int], None]] = getattr(os, "fdatasync", os.fsync)


def _fsync(fd: int) -> None:
    if _FULLFSYNC is not None:  # macOS: plain fsync does not reach the disk
        fcntl.fcntl(fd, _FULLFSYNC)
    else:
        _fdatasync(fd)


# -- file names ------------------------------------------------------------------------------
def encode_namespace(namespace: str) -> str:
    """The reversible, portable file stem of a namespace.

    Output uses only ``a-z 0-9 . _ -``: lower-case letters, digits, ``.`` and ``-`` stay as
    they are; ``_`` escapes the rest (``A`` → ``_a``, ``_`` → ``__``, ``:`` → ``_-``). No upper
    case, so a case-insensitive file system keeps ``User`` and ``user`` apart; the ``ns-`` prefix
    keeps Windows device names (``con``, ``nul``) out.
    """
    out = []
    for ch in namespace:
        if ch.islower() or ch.isdigit() or ch in ".-":
            out.append(ch)
        elif ch.isupper():
            out.append("_" + ch.lower())
        else:
            out.append("__" if ch == "_" else "_-")
    return PREFIX + "".join(out)


def decode_namespace(stem: str) -> str | None:
    """The namespace a file stem encodes, or ``None`` when it is not one of ours."""
    if not stem.startswith(PREFIX):
        return None
    chars = []
    escaped = False
    for ch in stem[len(PREFIX):]:
        if escaped:
            chars.append("_" if ch == "_" else ":" if ch == "-" else ch.upper())
            escaped = False
        elif ch == "_":
            escaped = True
        else:
            chars.append(ch)
    namespace = "".join(chars)
    try:
        NamespaceValidator.validate(namespace)
    except InvalidNamespaceError:
        return None
    return namespace if not escaped and encode_namespace(namespace) == stem else None


# -- the in-process cache of one namespace ---------------------------------------------------
class Space:
    """One namespace's cached entries, its index, and the journal state they reflect."""

    __slots__ = (
        "entries", "gen", "header", "index", "ino", "journal_path", "loaded", "lock",
        "lock_path", "loop", "mtime", "namespace", "seq", "size", "snapshot_bytes",
        "snapshot_path",
    )

    def __init__(self, namespace: str, base: str) -> None:
        self.namespace = namespace
        self.snapshot_path = base + SNAPSHOT
        self.journal_path = base + JOURNAL
        self.lock_path = base + LOCK
        self.entries: dict[str, Entry] = {}
        self.index = KeywordIndex()
        # Serialises this process's locked operations on the space (see FileMemory._lock).
        self.lock = asyncio.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loaded = False
        # The journal as last applied: inode, bytes applied (= its size), mtime, header line.
        self.ino: int | None = None
        self.size = 0
        self.mtime = 0
        self.header = b""
        self.gen: str | None = None
        self.snapshot_bytes = 0
        self.seq = 0

    def unchanged(self) -> bool:
        """Whether the files still hold exactly what the cache reflects (one ``stat``)."""
        if not self.loaded:
            return False
        try:
            st = os.stat(self.journal_path)
        except FileNotFoundError:
            return self.ino is None
        except OSError:
            return False
        return st.st_ino == self.ino and st.st_size == self.size and st.st_mtime_ns == self.mtime

    def live(self, key: str) -> Entry | None:
        entry = self.entries.get(key)
        if entry is not None and entry[3] is not None and entry[3] <= _time():
            return None
        return entry

    def reset(self) -> None:
        """The namespace has no files: it is empty."""
        for key in self.entries:
            self.index.mark(key)
        self.entries.clear()
        self.ino, self.size, self.mtime, self.header, self.gen = None, 0, 0, b"", None
        self.snapshot_bytes = 0
        self.loaded = True


def stored_form(value: Any, encoded: str) -> tuple[Any, bool]:
    """How an entry keeps a value: immutable scalars as they are, containers as JSON text."""
    cls = value.__class__
    if cls is str or cls is int or cls is float or cls is bool or value is None:
        return value, False
    return encoded, True


# -- records ---------------------------------------------------------------------------------
def _utf8(line: str) -> bytes:
    try:
        return line.encode()
    except UnicodeEncodeError:  # a lone surrogate: store it \u-escaped, which reads back equal
        return (_encode_ascii(_loads(line)) + "\n").encode()


def _set_line(key: str, text: str, stored_at: float, expires_at: float | None) -> bytes:
    x = "null" if expires_at is None else repr(expires_at)
    return _utf8(f'{{"op":"set","k":{_encode(key)},"v":{text},"t":{stored_at!r},"x":{x}}}\n')


def _header(kind: str, namespace: str, gen: str, **extra: int) -> bytes:
    head = {"format": f"claw_memory.file.{kind}", "version": FORMAT_VERSION,
            "namespace": namespace, "gen": gen, **extra}
    return (_encode(head) + "\n").encode()


def _is_time(value: object) -> bool:
    return value.__class__ is float or value.__class__ is int


def _valid_record(rec: object, snapshot: bool) -> bool:
    if not isinstance(rec, dict) or rec.get("k").__class__ is not str:
        return False
    op = rec.get("op")
    if op == "set" if not snapshot else op is None:
        x = rec.get("x")
        return "v" in rec and _is_time(rec.get("t")) and (x is None or _is_time(x))
    return op == "del"


class _Journal:
    """The journal fd of one locked operation (``None`` until the journal exists)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int | None = None) -> None:
        self.fd = fd


class _Session(_Journal):
    """Holds a namespace's exclusive lock, with its cache synced, for one ``with`` block."""

    __slots__ = ("lock_fd", "space", "store")

    def __init__(self, store: Store, space: Space) -> None:
        super().__init__()
        self.store, self.space, self.lock_fd = store, space, -1

    def __enter__(self) -> _Session:
        space = self.space
        lock_fd = self.store._open(space, space.lock_path, os.O_RDWR | os.O_CREAT)
        assert lock_fd is not None
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            self.fd = self.store._sync(space)
        except BaseException:
            space.loaded = False  # rebuild from the files next time
            os.close(lock_fd)
            raise
        self.lock_fd = lock_fd
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
        os.close(self.lock_fd)  # releases the lock


class Store:
    """Blocking file operations over one storage directory (call them from a worker thread)."""

    def __init__(self, root: str, *, fsync: bool, compact_min_bytes: int) -> None:
        self.root = root
        self.fsync = fsync
        self.compact_min_bytes = compact_min_bytes
        self._root_ready = False

    # -- operations: each one call from the event loop, under the namespace's file lock -------
    def refresh(self, space: Space) -> None:
        """Bring the cache up to date with the files."""
        if self._absent(space):
            space.reset()
            return
        with self._session(space):
            pass

    def put(self, space: Space, key: str, stored: Any, is_json: bool, encoded: str,
            ttl: float | None) -> None:
        with self._session(space, create=True) as journal:
            self._write_set(space, journal, key, stored, is_json, encoded, ttl)

    def restore(self, batches: Sequence[tuple[Space, Sequence[Write]]]) -> None:
        """Write each space's sets in order, with their absolute expiry, one lock per space.

        Sets whose expiry has passed by the time the lock is held are skipped.
        """
        for space, writes in batches:
            with self._session(space, create=True) as journal:
                now = _time()
                self._write_sets(
                    space, journal, [w for w in writes if w[4] is None or w[4] > now], now
                )

    def update(self, space: Space, key: str, fn: Callable[[Any], Any],
               ttl: float | None) -> tuple[Any, BaseException | None]:
        """Apply ``fn`` to the current value and store its result; ``fn``'s error is returned."""
        with self._session(space, create=True) as journal:
            entry = space.live(key)
            current = None if entry is None else (_loads(entry[0]) if entry[1] else entry[0])
            try:
                value = fn(current)
            except Exception as exc:  # handed back to the caller untranslated
                return None, exc
            encoded = encode_json(value)
            stored, is_json = stored_form(value, encoded)
            self._write_set(space, journal, key, stored, is_json, encoded, ttl)
            return value, None

    def remove(self, space: Space, key: str) -> None:
        if self._absent(space):
            space.reset()
            return
        with self._session(space) as journal:
            if key not in space.entries:
                return
            self._append(space, journal, _utf8(f'{{"op":"del","k":{_encode(key)}}}\n'))
            del space.entries[key]
            space.index.mark(key)
            self._maybe_compact(space)

    def clear(self, space: Space) -> None:
        """Flush: compact to an empty snapshot (O(1), atomic)."""
        if self._absent(space):
            space.reset()
            return
        with self._session(space):
            for key in space.entries:
                space.index.mark(key)
            space.entries.clear()
            self._compact(space)

    def namespaces(self) -> list[str]:
        """Namespaces that have files in the directory (live entries or not)."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        found = set()
        for name in names:
            for suffix in (JOURNAL, SNAPSHOT):
                if name.endswith(suffix):
                    namespace = decode_namespace(name[: -len(suffix)])
                    if namespace is not None:
                        found.add(namespace)
        return sorted(found)

    # -- the lock and the sync ----------------------------------------------------------------
    def _session(self, space: Space, create: bool = False) -> _Session:
        if create and not self._root_ready:
            os.makedirs(self.root, exist_ok=True)
            self._root_ready = True
        return _Session(self, space)

    def _sync(self, space: Space) -> int | None:
        """Apply what other writers appended (or reload); returns the open journal, if any."""
        fd = self._open(space, space.journal_path, os.O_RDWR | os.O_APPEND, missing_ok=True)
        if fd is not None and space.loaded and space.ino is not None:
            try:
                st = os.fstat(fd)
                # Same file, same generation (its header), nothing cut below what we applied.
                if (st.st_ino == space.ino and st.st_size >= space.size
                        and os.pread(fd, len(space.header), 0) == space.header):
                    if st.st_size > space.size:
                        data = _pread_all(fd, st.st_size - space.size, space.size)
                        records, used = self._parse(space, data, space.size, snapshot=False)
                        space.seq = _apply(space.entries, space.index, records, space.seq)
                        self._settle(space, fd, space.size + used, st.st_size)
                    return fd
            except BaseException:
                os.close(fd)
                raise
        return self._reload(space, fd)

    def _settle(self, space: Space, fd: int, end: int, size: int) -> None:
        if end < size:  # a torn final record: cut it so the next append cannot glue onto it
            os.ftruncate(fd, end)
        space.size = end
        space.mtime = os.fstat(fd).st_mtime_ns

    def _reload(self, space: Space, fd: int | None) -> int | None:
        """Rebuild the cache from the snapshot and the journal (takes ownership of ``fd``)."""
        journal = _Journal(fd)
        try:
            return self._reload_into(space, journal)
        except BaseException:
            if journal.fd is not None:
                os.close(journal.fd)
            raise

    def _reload_into(self, space: Space, journal: _Journal) -> int | None:
        for tmp in (space.snapshot_path + TMP, space.journal_path + TMP):
            _unlink_quiet(tmp)  # only a compaction, under this lock, writes them: stale
        had_journal = journal.fd is not None
        entries: dict[str, Entry] = {}
        gen, seq, snapshot = None, 0, self._read(space, space.snapshot_path)
        if snapshot is not None:
            gen, seq = self._parse_snapshot(space, snapshot, entries)
        header = b""
        if journal.fd is not None:
            fd = journal.fd
            data = _pread_all(fd, os.fstat(fd).st_size, 0)
            header, journal_gen = self._journal_header(space, data)
            if header and (gen is None or journal_gen == gen):
                gen = journal_gen
                records, used = self._parse(space, data[len(header):], len(header),
                                            snapshot=False)
                seq = _apply(entries, None, records, seq)
                self._settle(space, fd, len(header) + used, len(data))
            else:  # empty, torn header, or left over from before the last compaction
                journal.fd = None
                os.close(fd)
        # Keep the index: mark only what differs from the cache being replaced.
        old = space.entries
        for key in old.keys() - entries.keys():
            space.index.mark(key)
        for key, entry in entries.items():
            before = old.get(key)
            if (before is None or before[0].__class__ is not entry[0].__class__
                    or before[:2] != entry[:2]):  # 1 == True, but they score differently
                space.index.mark(key)
        space.entries, space.seq, space.gen = entries, seq, gen
        space.snapshot_bytes = 0 if snapshot is None else len(snapshot)
        if journal.fd is not None:
            space.ino, space.header = os.fstat(journal.fd).st_ino, header
        elif snapshot is not None or had_journal:
            journal.fd = self._new_journal(space, gen or secrets.token_hex(8))
        else:
            space.ino, space.size, space.mtime, space.header = None, 0, 0, b""
        space.loaded = True
        return journal.fd

    # -- writing ------------------------------------------------------------------------------
    def _write_set(self, space: Space, journal: _Journal, key: str, stored: Any,
                   is_json: bool, encoded: str, ttl: float | None) -> None:
        now = _time()
        expires = None if ttl is None else now + ttl
        self._write_sets(space, journal, [(key, stored, is_json, encoded, expires)], now)

    def _write_sets(self, space: Space, journal: _Journal, writes: Sequence[Write],
                    now: float) -> None:
        """Append one set record per write, in one ``os.write``, then update the cache."""
        if not writes:
            return
        self._append(space, journal, b"".join(
            [_set_line(key, encoded, now, expires) for key, _, _, encoded, expires in writes]
        ))
        entries, mark = space.entries, space.index.mark
        for key, stored, is_json, _, expires in writes:
            space.seq += 1
            entries.pop(key, None)
            entries[key] = (stored, is_json, now, expires, space.seq)
            mark(key)
        self._maybe_compact(space)

    def _append(self, space: Space, journal: _Journal, data: bytes) -> None:
        """Append whole records (one ``os.write`` on the ``O_APPEND`` fd, in practice)."""
        fd = journal.fd
        if fd is None:
            fd = journal.fd = self._new_journal(space, space.gen or secrets.token_hex(8))
        try:
            view = memoryview(data)
            while view:  # a regular file writes all at once but past 2 GiB or on an error
                written = os.write(fd, view)
                if not written:
                    raise OSError(errno.ENOSPC, "short write to the journal")
                view = view[written:]
            if self.fsync:
                _fsync(fd)
        except OSError:
            with suppress(OSError):  # leave no partial or unacknowledged record behind
                os.ftruncate(fd, space.size)
            raise
        space.size += len(data)
        space.mtime = os.fstat(fd).st_mtime_ns

    def _maybe_compact(self, space: Space) -> None:
        if space.size > max(self.compact_min_bytes, space.snapshot_bytes):
            self._compact(space)

    def _compact(self, space: Space) -> None:
        """Write the live entries as a new snapshot, then start a new, empty journal.

        Both files are replaced atomically and fsynced in every durability mode, with the
        directory fsynced between the two renames: a crash leaves either the old pair, or the
        new snapshot with the old journal (whose generation no longer matches, so it is
        ignored: the snapshot already holds its records), or the new pair.
        """
        now = _time()
        lines = []
        for key, (stored, is_json, stored_at, expires, _) in list(space.entries.items()):
            if expires is not None and expires <= now:
                del space.entries[key]
                space.index.mark(key)
                continue
            x = "null" if expires is None else repr(expires)
            text = stored if is_json else _encode(stored)
            lines.append(_utf8(f'{{"k":{_encode(key)},"v":{text},"t":{stored_at!r},"x":{x}}}\n'))
        gen = secrets.token_hex(8)
        data = _header("snapshot", space.namespace, gen, count=len(lines)) + b"".join(lines)
        os.close(self._write_new(space, space.snapshot_path, data, os.O_WRONLY))
        self._fsync_dir()
        os.close(self._new_journal(space, gen))
        space.snapshot_bytes = len(data)

    def _new_journal(self, space: Space, gen: str) -> int:
        """Atomically start an empty journal of generation ``gen``; returns its fd."""
        header = _header("journal", space.namespace, gen)
        fd = self._write_new(space, space.journal_path, header, os.O_RDWR | os.O_APPEND)
        try:
            self._fsync_dir()
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        space.ino, space.size, space.mtime, space.header, space.gen = (
            st.st_ino, len(header), st.st_mtime_ns, header, gen)
        return fd

    def _write_new(self, space: Space, path: str, data: bytes, mode: int) -> int:
        """Write ``data`` to a temp file, fsync it and rename it over ``path``; returns its fd."""
        tmp = path + TMP
        _unlink_quiet(tmp)
        fd = os.open(tmp, mode | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            _fsync(fd)
            os.replace(tmp, path)
        except BaseException:
            os.close(fd)
            _unlink_quiet(tmp)
            raise
        return fd

    def _fsync_dir(self) -> None:
        fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- reading ------------------------------------------------------------------------------
    def _absent(self, space: Space) -> bool:
        # Neither file exists: nothing was ever written. Files are only ever replaced, never
        # removed, so this needs no lock.
        return not os.path.lexists(space.journal_path) and not os.path.lexists(
            space.snapshot_path)

    def _open(self, space: Space, path: str, flags: int, missing_ok: bool = False) -> int | None:
        """Open a namespace file, refusing a symlink that leads outside ``storage_dir``."""
        try:
            return os.open(path, flags | _NOFOLLOW | _CLOEXEC, 0o666)
        except FileNotFoundError:
            if missing_ok:
                return None
            raise
        except OSError as exc:
            if exc.errno not in _SYMLINK_ERRNOS or not os.path.islink(path):
                raise
        root = os.path.realpath(self.root)
        if os.path.commonpath([root, os.path.realpath(path)]) != root:
            raise CorruptStoreError(
                f"namespace {space.namespace!r}: {os.path.basename(path)} is a symlink to a "
                "file outside storage_dir; refusing to follow it",
                namespace=space.namespace,
            )
        try:
            return os.open(path, flags | _CLOEXEC, 0o666)
        except FileNotFoundError:
            if missing_ok:
                return None
            raise

    def _read(self, space: Space, path: str) -> bytes | None:
        fd = self._open(space, path, os.O_RDONLY, missing_ok=True)
        if fd is None:
            return None
        try:
            return _pread_all(fd, os.fstat(fd).st_size, 0)
        finally:
            os.close(fd)

    def _corrupt(self, space: Space, what: str) -> CorruptStoreError:
        return CorruptStoreError(
            f"namespace {space.namespace!r} is corrupt: {what}. The files are left untouched "
            f"and every operation on this namespace refuses until they are repaired or moved "
            f"aside (see docs/file-layout.md)",
            namespace=space.namespace,
        )

    def _check_header(self, space: Space, line: bytes, kind: str) -> Record:
        try:
            head = _loads(line.decode())
        except ValueError:
            head = None
        if (head.__class__ is not dict or head.get("format") != f"claw_memory.file.{kind}"
                or head.get("gen").__class__ is not str):
            raise self._corrupt(space, f"the {kind} header is not valid")
        if head.get("version") != FORMAT_VERSION:
            raise self._corrupt(space, f"the {kind} has format version {head.get('version')!r}")
        if head.get("namespace") != space.namespace:
            raise self._corrupt(space, f"the {kind} belongs to another namespace")
        return head

    def _journal_header(self, space: Space, data: bytes) -> tuple[bytes, str | None]:
        end = data.find(b"\n") + 1
        if end == 0:  # empty, or the header itself was torn
            return b"", None
        return data[:end], self._check_header(space, data[:end], "journal")["gen"]

    def _parse_snapshot(self, space: Space, data: bytes, entries: dict[str, Entry]
                        ) -> tuple[str, int]:
        end = data.find(b"\n") + 1
        head = self._check_header(space, data[:end] if end else data, "snapshot")
        if not data.endswith(b"\n"):
            raise self._corrupt(space, "the snapshot is truncated")
        records, _ = self._parse(space, data[end:], end, snapshot=True)
        if len(records) != head.get("count"):
            raise self._corrupt(space, "the snapshot does not hold the entry count it declares")
        return head["gen"], _apply(entries, None, records, 0)

    def _parse(self, space: Space, data: bytes, offset: int, *, snapshot: bool
               ) -> tuple[list[Record], int]:
        """Complete, valid records of ``data`` and the bytes they span.

        A final line without a newline, or an unparsable final line, is a torn write and is
        left out; any other bad line is corruption.
        """
        lines = data.split(b"\n")
        torn = lines.pop()
        records: list[Record] = []
        used = 0
        last = len(lines) - 1
        kind = "snapshot" if snapshot else "journal"
        for i, raw in enumerate(lines):
            try:
                rec = _loads(raw.decode())
            except ValueError:
                if i == last and not torn and not snapshot:
                    break
                raise self._corrupt(space, f"the {kind} line at byte {offset + used} is not "
                                           "valid JSON") from None
            if not _valid_record(rec, snapshot):
                raise self._corrupt(space, f"the {kind} line at byte {offset + used} is not a "
                                           "valid record")
            records.append(rec)
            used += len(raw) + 1
        return records, used


def _apply(entries: dict[str, Entry], index: KeywordIndex | None, records: list[Record],
           seq: int) -> int:
    for rec in records:
        key = rec["k"]
        entries.pop(key, None)
        if rec.get("op", "set") == "set":
            value = rec["v"]
            seq += 1
            if value.__class__ is dict or value.__class__ is list:
                entries[key] = (_encode(value), True, float(rec["t"]), rec["x"], seq)
            else:
                entries[key] = (value, False, float(rec["t"]), rec["x"], seq)
        if index is not None:
            index.mark(key)
    return seq


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _unlink_quiet(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)
