"""MemoryRegistry and MemoryCatalogue."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

import pytest

from claw_memory import (
    ArrayMemory,
    MemoryCatalogue,
    MemoryException,
    MemoryRegistry,
    RegistryError,
)
from claw_memory import registry as registry_module


def test_array_is_built_in_and_names_are_case_insensitive() -> None:
    assert MemoryRegistry.has("array")
    assert MemoryRegistry.has("ARRAY")
    assert MemoryRegistry.has("file")
    assert isinstance(MemoryRegistry.build("Array"), ArrayMemory)
    assert {"array", "file"} <= set(MemoryRegistry.names())


def test_register_class_and_factory_and_options_pass_through() -> None:
    class Custom(ArrayMemory):
        pass

    MemoryRegistry.register("Custom", Custom)
    assert type(MemoryRegistry.build("custom")) is Custom
    MemoryRegistry.register("ttl-array", lambda **options: ArrayMemory(**options))
    built = MemoryRegistry.build("TTL-ARRAY", default_ttl=60)
    assert isinstance(built, ArrayMemory)
    assert built.default_ttl == 60


def test_registering_a_non_memory_class_fails() -> None:
    with pytest.raises(MemoryException, match="not a claw_memory Memory"):
        MemoryRegistry.register("dict", dict)  # type: ignore[arg-type]
    with pytest.raises(RegistryError):
        MemoryRegistry.register("thing", 42)  # type: ignore[arg-type]
    assert not MemoryRegistry.has("dict")


def test_a_factory_returning_something_else_fails_at_build() -> None:
    MemoryRegistry.register("bad", lambda: {"not": "memory"})  # type: ignore[arg-type,return-value]
    with pytest.raises(MemoryException, match="returned dict"):
        MemoryRegistry.build("bad")


def test_unknown_name_and_reset() -> None:
    with pytest.raises(RegistryError, match="no memory driver named 'nope'"):
        MemoryRegistry.build("nope")
    with pytest.raises(RegistryError, match=r"MemoryCatalogue\.activate"):
        MemoryRegistry.build("redis")
    MemoryRegistry.register("extra", ArrayMemory)
    MemoryRegistry.reset()
    assert not MemoryRegistry.has("extra")
    assert MemoryRegistry.has("array")


def test_catalogue_activates_installed_extras() -> None:
    activated = MemoryCatalogue.activate()
    assert set(activated) == {"redis", "sql"}  # both extras are installed in the test env
    assert MemoryRegistry.has("redis")
    assert MemoryRegistry.has("sql")


def test_entry_point_drivers_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    point = EntryPoint(
        name="Plugged", value="claw_memory.drivers.array:ArrayMemory",
        group=registry_module.ENTRY_POINT_GROUP,
    )

    def fake_entry_points(**kwargs: Any) -> list[EntryPoint]:
        assert kwargs == {"group": registry_module.ENTRY_POINT_GROUP}
        return [point]

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    MemoryRegistry.reset()
    assert MemoryRegistry.has("plugged")
    assert isinstance(MemoryRegistry.build("plugged"), ArrayMemory)


def test_from_url_builds_in_process_and_file_drivers(tmp_path: Any) -> None:
    assert isinstance(MemoryRegistry.from_url("array:"), ArrayMemory)
    file_memory = MemoryRegistry.from_url(f"file://{tmp_path}/store")
    assert type(file_memory).__name__ == "FileMemory"


def test_from_url_rejects_unknown_schemes_without_echoing_the_url() -> None:
    with pytest.raises(RegistryError) as caught:
        MemoryRegistry.from_url("ftp://user:hunter2@example.com/x")
    assert "hunter2" not in str(caught.value)
    assert "'ftp'" in str(caught.value)
