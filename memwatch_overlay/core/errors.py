"""Domain exceptions and exit codes, shared by the library, the CLI and the daemon.

Library code raises these; `overlay.cli` is the one place that turns them into a
one-line `Error: ...` on stderr and an exit code.
"""
from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    OK = 0            # success, or the CI gate passed
    GATE_FAILED = 1   # thresholds exceeded
    BAD_INPUT = 2     # bad usage, bad config, unreadable input
    INTERNAL_ERROR = 70   # an unexpected exception, i.e. a bug (sysexits' EX_SOFTWARE); --traceback shows it
    INTERRUPTED = 130  # Ctrl-C
    BROKEN_PIPE = 141  # stdout closed early (`audit | head`): 128 + SIGPIPE, as a shell reports it


class MemwatchError(Exception):
    """Base of every error the CLI reports as one line with exit code 2."""

    exit_status = ExitStatus.BAD_INPUT
    hint: str | None = None   # optional extra lines the CLI prints after the one-line error

    def with_hint(self, hint: str) -> "MemwatchError":
        self.hint = hint
        return self


class ConfigError(MemwatchError):
    """memwatch.toml (or a flag standing in for it) is invalid.

    `field` is the dotted key that is wrong, e.g. ``sources[0].table``.
    """

    def __init__(self, message: str, field: str | None = None, path: str | None = None):
        self.field = field
        self.path = path
        where = ""
        if path:
            where += f"{path}: "
        if field:
            where += f"{field}: "
        super().__init__(where + message)


class RuleError(ConfigError):
    """A [[rules]] or [[actions]] entry cannot be used (bad regex, unknown label...)."""


class ConnectorError(MemwatchError):
    """A source cannot be opened or read (missing file, missing table, bad column...)."""


class ReadOnlyViolation(ConnectorError):
    """User SQL that is not a single read-only SELECT."""


class OverlayError(MemwatchError):
    """The overlay database cannot be opened or is from an unknown future schema."""
