"""The ``claw-memory`` command: a terminal chat with memory, and tools over any driver URL.

``claw-memory chat`` is the main job; ``get``, ``set``, ``forget``, ``flush``, ``ls``,
``search``, ``export`` and ``import`` work on the store behind ``--memory URL``. Exit codes:
0 done, 1 the operation failed, 2 the command line was wrong (130 when interrupted by Ctrl-C
outside a chat). Errors are one line on stderr; ``--debug`` adds the traceback.
See ``docs/cli.md``.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import Annotated

import typer

from claw_memory.cli._common import STATE, OperationFailed, UsageProblem, print_error, scrub
from claw_memory.cli.chat import chat_command
from claw_memory.cli.store import (
    flush_command,
    forget_command,
    get_command,
    ls_command,
    search_command,
    set_command,
)
from claw_memory.cli.transfer import export_command, import_command

__all__ = ["INTERRUPTED", "app", "main"]

#: The exit code of a command interrupted by Ctrl-C (the shell convention, 128 + SIGINT).
INTERRUPTED = 130

app = typer.Typer(
    name="claw-memory",
    help="Chat with memory in the terminal, and inspect, search, export or import any memory "
    "store. Start with: claw-memory chat",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from claw_memory import __version__

        typer.echo(f"claw-memory {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    debug: Annotated[
        bool,
        typer.Option("--debug", envvar="CLAW_MEMORY_DEBUG",
                     help="Print the traceback of an error, not just its message."),
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True,
                     help="Print the version and exit."),
    ] = False,
) -> None:
    """Chat with memory, and manage memory stores."""
    STATE.debug = STATE.debug or debug
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


app.command("chat")(chat_command)
app.command("get")(get_command)
app.command("set")(set_command)
app.command("forget")(forget_command)
app.command("flush")(flush_command)
app.command("ls")(ls_command)
app.command("search")(search_command)
app.command("export")(export_command)
app.command("import")(import_command)


def _command_line_error(exc: Exception) -> tuple[int, str] | None:
    """Exit code and message of a command-line parsing error (Typer's or Click's classes)."""
    code = getattr(exc, "exit_code", None)
    format_message = getattr(exc, "format_message", None)
    if not isinstance(code, int) or format_message is None:
        return None
    message = str(format_message())
    if code == 2:
        ctx = getattr(exc, "ctx", None)
        where = getattr(ctx, "command_path", None) or "claw-memory"
        message = f"{message} (see '{where} --help')"
    return code, message


def _failure(exc: BaseException, code: int, message: str | None = None) -> int:
    if STATE.debug:
        sys.stderr.write(scrub("".join(traceback.format_exception(exc))))
    print_error(message if message is not None else str(exc))
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``claw-memory`` with ``argv`` (default: the process arguments); returns the exit code."""
    from claw_memory.errors import ClawMemoryError, InvalidInputError, RegistryError

    STATE.debug = os.environ.get("CLAW_MEMORY_DEBUG", "").lower() in {"1", "true", "yes"}
    command = typer.main.get_command(app)
    try:
        result = command.main(
            args=list(argv) if argv is not None else None,
            prog_name="claw-memory",
            standalone_mode=False,
        )
    except typer.Abort as exc:
        return _failure(exc, 1, "aborted")
    except UsageProblem as exc:
        return _failure(exc, 2)
    except (InvalidInputError, RegistryError) as exc:
        return _failure(exc, 2)
    except (OperationFailed, ClawMemoryError) as exc:
        return _failure(exc, 1)
    except OSError as exc:
        return _failure(exc, 1, f"{exc.strerror or type(exc).__name__}"
                        f"{': ' + str(exc.filename) if exc.filename else ''}")
    except Exception as exc:
        parsed = _command_line_error(exc)
        if parsed is not None:
            return _failure(exc, *parsed)
        return _failure(
            exc, 1,
            f"unexpected {type(exc).__name__}: {exc}"
            + ("" if STATE.debug else " (run with --debug for the traceback)"),
        )
    finally:
        sys.stdout.flush()
    code = result if isinstance(result, int) else 0
    if code == INTERRUPTED:
        print_error("interrupted")
    return code
