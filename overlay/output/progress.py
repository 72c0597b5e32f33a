"""A progress line on stderr while a long scan runs (shown only after a moment)."""
from __future__ import annotations

import time

from memwatch_overlay.overlay.output.console import OutputConsole as Console


class ScanProgress:
    """Called as ``progress(source, records_read)``; draws a transient rich line on stderr
    once a scan has taken more than DELAY seconds, and clears it on `stop()`."""

    DELAY = 0.7

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.started = time.monotonic()
        self.progress = None
        self.task = None

    def __call__(self, source: str, n: int) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            if time.monotonic() - self.started < self.DELAY:
                return
            from rich.progress import Progress, SpinnerColumn, TextColumn
            self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                     console=Console(stderr=True), transient=True)
            self.progress.start()
            self.task = self.progress.add_task("")
        self.progress.update(self.task, description=f"reading {source}: {n:,} records")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
