"""Build drivers by name: :class:`MemoryRegistry` and :class:`MemoryCatalogue`.

``MemoryRegistry`` knows ``file`` and ``array`` out of the box; ``redis`` and ``sql`` once
``MemoryCatalogue.activate()`` has run (and their extras are installed). Third-party packages
can add drivers through the ``claw_memory.drivers`` entry-point group::

    [project.entry-points."claw_memory.drivers"]
    mydriver = "my_package:MyMemory"

Names are case-insensitive. The registry is process-wide.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from claw_memory.contracts import Memory
from claw_memory.errors import RegistryError

__all__ = ["ENTRY_POINT_GROUP", "MemoryCatalogue", "MemoryRegistry"]

logger = logging.getLogger("claw_memory.registry")

ENTRY_POINT_GROUP = "claw_memory.drivers"

Factory = Callable[..., Memory]


def _lazy(module: str, attribute: str) -> Factory:
    def build(**options: Any) -> Memory:
        cls = getattr(importlib.import_module(module), attribute)
        return cls(**options)  # type: ignore[no-any-return]

    build.__qualname__ = f"{attribute}"
    return build


_BUILTINS: dict[str, Factory] = {
    "array": _lazy("claw_memory.drivers.array", "ArrayMemory"),
    "file": _lazy("claw_memory.drivers.file", "FileMemory"),
}


def _normalise(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise RegistryError("a driver name must be a non-empty str")
    return name.strip().lower()


class MemoryRegistry:
    """The process-wide table of driver names to classes or factories."""

    _factories: ClassVar[dict[str, Factory]] = dict(_BUILTINS)
    _entry_points_loaded: ClassVar[bool] = False

    @classmethod
    def register(cls, name: str, cls_or_factory: type[Memory] | Factory) -> None:
        """Make ``cls_or_factory`` buildable as ``name`` (replacing an earlier registration).

        A class must be a :class:`~claw_memory.contracts.Memory` subclass; a factory must
        return a ``Memory`` when built. Anything else raises
        :class:`~claw_memory.errors.RegistryError`.
        """
        key = _normalise(name)
        if inspect.isclass(cls_or_factory):
            if not issubclass(cls_or_factory, Memory):
                raise RegistryError(
                    f"cannot register {cls_or_factory.__name__!r} as {key!r}: "
                    "it is not a claw_memory Memory subclass"
                )
        elif not callable(cls_or_factory):
            raise RegistryError(
                f"cannot register {key!r}: expected a Memory class or a factory, "
                f"got {type(cls_or_factory).__name__}"
            )
        cls._factories[key] = cls_or_factory

    @classmethod
    def build(cls, name: str = "file", **options: Any) -> Memory:
        """Construct the driver registered as ``name`` with ``options``."""
        key = _normalise(name)
        factory = cls._factories.get(key)
        if factory is None:
            cls._load_entry_points()
            factory = cls._factories.get(key)
        if factory is None:
            hint = ""
            if key in MemoryCatalogue.DRIVERS:
                hint = " (call MemoryCatalogue.activate() first, with its extra installed)"
            raise RegistryError(f"no memory driver named {key!r}{hint}")
        memory = factory(**options)
        if not isinstance(memory, Memory):
            raise RegistryError(
                f"the factory registered as {key!r} returned {type(memory).__name__}, "
                "not a claw_memory Memory"
            )
        return memory

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Memory:
        """Build a driver from a driver URL.

        ``array:`` (in process), ``file:///abs/path`` or ``file:relative/path`` (FileMemory),
        ``redis://…`` / ``rediss://…`` (RedisMemory), and any SQLAlchemy async URL such as
        ``sqlite+aiosqlite:///app.db``, ``postgresql+asyncpg://…`` or ``mysql+asyncmy://…``
        (SqlMemory). ``options`` go to the driver's constructor.
        """
        if not isinstance(url, str) or not url:
            raise RegistryError("a driver URL must be a non-empty str")
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "array":
            return cls.build("array", **options)
        if scheme == "file":
            path = unquote(parts.path) if not parts.netloc else unquote(parts.netloc + parts.path)
            return cls.build("file", storage_dir=Path(path or "."), **options)
        if scheme in {"redis", "rediss", "unix"} or scheme.startswith("redis+"):
            MemoryCatalogue.activate()
            return cls.build("redis", url=url, **options)
        base = scheme.split("+", 1)[0]
        if base in {"sqlite", "postgresql", "postgres", "mysql", "mariadb"}:
            module, attribute, _ = MemoryCatalogue.DRIVERS["sql"]
            sql_memory = getattr(importlib.import_module(module), attribute)
            return sql_memory(url, **options)  # type: ignore[no-any-return]
        # Never echo the URL: it may carry a password.
        raise RegistryError(
            f"unsupported driver URL scheme {scheme!r}; use array:, file:, redis://, rediss:// "
            "or an SQLAlchemy async URL (sqlite+aiosqlite://, postgresql+asyncpg://, …)"
        )

    @classmethod
    def has(cls, name: str) -> bool:
        """Whether ``name`` can be built."""
        key = _normalise(name)
        if key not in cls._factories:
            cls._load_entry_points()
        return key in cls._factories

    @classmethod
    def names(cls) -> list[str]:
        """Every buildable name, sorted."""
        cls._load_entry_points()
        return sorted(cls._factories)

    @classmethod
    def reset(cls) -> None:
        """Back to the built-in ``file`` and ``array`` only (entry points load again on use)."""
        cls._factories = dict(_BUILTINS)
        cls._entry_points_loaded = False

    @classmethod
    def _load_entry_points(cls) -> None:
        if cls._entry_points_loaded:
            return
        cls._entry_points_loaded = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            name = ep.name.lower()
            if name in cls._factories:
                continue
            try:
                cls.register(name, ep.load())
            except Exception as exc:  # one broken plugin must not hide the others
                logger.warning("memory driver entry point %r failed to load: %s",
                               ep.name, type(exc).__name__)


class MemoryCatalogue:
    """Adds the drivers that need optional extras to :class:`MemoryRegistry`."""

    DRIVERS: ClassVar[dict[str, tuple[str, str, str]]] = {
        # name: (module, class, the import its extra provides)
        "redis": ("claw_memory.drivers.redis", "RedisMemory", "redis"),
        "sql": ("claw_memory.drivers.sql", "SqlMemory", "sqlalchemy"),
    }

    @classmethod
    def activate(cls) -> list[str]:
        """Register every catalogue driver whose extra is installed; returns their names."""
        activated = []
        for name, (module, attribute, requirement) in cls.DRIVERS.items():
            if importlib.util.find_spec(requirement) is None:
                continue
            MemoryRegistry.register(name, _lazy(module, attribute))
            activated.append(name)
        return activated
