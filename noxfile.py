"""Developer tasks: ``nox -s tests`` (the whole suite), ``lint``, ``typecheck``, ``bench``."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the whole test suite (services: see README; CI=true makes every service required)."""
    session.install("-e", ".[dev]")
    session.run("pytest", *(session.posargs or ["-q"]))


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the package, tests, examples and benchmarks."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package and the tests."""
    session.install("-e", ".[dev]")
    session.run("mypy", "--strict")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Run every benchmark in benchmarks/ and write benchmarks/REPORT.md."""
    session.install("-e", ".[dev,bench]")
    session.run("python", "benchmarks/run_all.py", *session.posargs)
