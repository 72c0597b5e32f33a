"""The rich Console every renderer draws on, with one change: a closed pipe is an error.

rich's own Console answers a BrokenPipeError with `SystemExit(1)`, which is the CI gate's
exit code: `audit | head` would then read as "gate failed". This one re-raises the
BrokenPipeError, and the CLI's choke point (overlay/cli/errors.py) exits 141 for it.
"""
from __future__ import annotations

import errno

from rich.console import Console


class OutputConsole(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True        # nothing more to write: the reader is gone
        raise BrokenPipeError(errno.EPIPE, "the reader of the output closed it")
