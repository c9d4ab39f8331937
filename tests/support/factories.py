"""Driver factories the conformance suite runs over, by name.

Each driver module of the test support adds its entries to :data:`FACTORIES`: a function of the
pytest request returning a ``memory_factory`` (a callable giving an async context manager that
yields a fresh, empty, isolated driver).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from claw_memory import ArrayMemory, Memory, PrivacyAwareMemory, RouterMemory

MemoryFactory = Callable[[], AbstractAsyncContextManager[Memory]]
FactoryMaker = Callable[[pytest.FixtureRequest], MemoryFactory]

FACTORIES: dict[str, FactoryMaker] = {}


def factory(name: str) -> Callable[[FactoryMaker], FactoryMaker]:
    """Register a factory maker under ``name``."""

    def register(maker: FactoryMaker) -> FactoryMaker:
        FACTORIES[name] = maker
        return maker

    return register


def simple(build: Callable[[], Memory]) -> MemoryFactory:
    """A memory_factory for drivers that need no setup beyond construction."""

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Memory]:
        async with build() as memory:
            yield memory

    return make


@factory("array")
def _array(request: pytest.FixtureRequest) -> MemoryFactory:
    return simple(ArrayMemory)


@factory("privacy(array)")
def _privacy(request: pytest.FixtureRequest) -> MemoryFactory:
    return simple(lambda: PrivacyAwareMemory(ArrayMemory(), store_messages=True))


class PlainMemory(Memory):
    """A driver without ``search``, so wrappers must rank its ``all()``."""

    def __init__(self) -> None:
        self._inner = ArrayMemory()

    async def get(self, key: str, namespace: str = "default") -> Any:
        return await self._inner.get(key, namespace)

    async def set(
        self, key: str, value: Any, namespace: str = "default", ttl: float | None = None
    ) -> None:
        await self._inner.set(key, value, namespace, ttl)

    async def forget(self, key: str, namespace: str = "default") -> None:
        await self._inner.forget(key, namespace)

    async def flush(self, namespace: str = "default") -> None:
        await self._inner.flush(namespace)

    async def all(self, namespace: str = "default") -> dict[str, Any]:
        return await self._inner.all(namespace)

    async def has(self, key: str, namespace: str = "default") -> bool:
        return await self._inner.has(key, namespace)


@factory("router(array)")
def _router(request: pytest.FixtureRequest) -> MemoryFactory:
    # "default" is routed to a second driver, so the suite runs through a route; the rest of
    # its namespaces fall through to the default driver.
    return simple(lambda: RouterMemory(ArrayMemory(), routes={"default": ArrayMemory()}))


@factory("privacy(router(plain))")
def _privacy_over_plain(request: pytest.FixtureRequest) -> MemoryFactory:
    return simple(
        lambda: PrivacyAwareMemory(
            RouterMemory(PlainMemory(), routes={"ev": PlainMemory()}), store_messages=True
        )
    )


def _load_driver_factories() -> None:
    # Each tests/support/drivers_<name>.py registers its drivers' factories when imported.
    import importlib
    import pkgutil

    import tests.support as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("drivers_"):
            importlib.import_module(f"tests.support.{info.name}")


_load_driver_factories()
