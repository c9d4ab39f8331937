"""Test configuration: service reporting and isolation of process-wide state."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from claw_memory import hooks
from claw_memory.registry import MemoryRegistry
from tests.support import services

# In CI, property tests replay the same examples every run (a failure is reproducible from the
# log); on a developer's machine they keep exploring new ones.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if services.IN_CI:
    settings.load_profile("ci")


def pytest_report_header() -> list[str]:
    mode = "CI=true: every service is required" if services.IN_CI else "local: fallbacks allowed"
    return [f"claw_memory services: {mode}"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not services.USED:
        return
    terminalreporter.section("claw_memory services")
    for service, how in sorted(services.USED.items()):
        terminalreporter.write_line(f"{service}: {how}")


@pytest.fixture(autouse=True)
def _clean_process_state() -> Iterator[None]:
    """Each test starts with no event handlers and the built-in registry."""
    hooks.default_hooks.clear()
    MemoryRegistry.reset()
    yield
    hooks.default_hooks.clear()
    MemoryRegistry.reset()
