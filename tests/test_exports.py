"""The public surface: ``__all__`` matches what the package defines, and imports stay light."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import claw_memory

PUBLIC_MODULES = [
    "claw_memory",
    "claw_memory.errors",
    "claw_memory.contracts",
    "claw_memory.validation",
    "claw_memory.scoring",
    "claw_memory.hooks",
    "claw_memory.registry",
    "claw_memory.drivers",
    "claw_memory.wrappers",
    "claw_memory.testing",
    "claw_memory.guards",
    "claw_memory.models",
]


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_names_exist_and_are_unique(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(module, name) is not None, name


def test_package_all_lists_every_public_definition() -> None:
    public = {
        name
        for name, value in vars(claw_memory).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "").startswith("claw_memory")
    }
    assert public <= set(claw_memory.__all__)


def test_import_does_not_load_optional_backends() -> None:
    code = (
        "import sys, claw_memory, claw_memory.drivers, claw_memory.testing;"
        "print(sorted(m for m in ('redis', 'sqlalchemy', 'asyncpg', 'aiosqlite')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_errors_do_not_shadow_builtins() -> None:
    import builtins

    from claw_memory import errors

    assert not set(errors.__all__) & set(dir(builtins))
