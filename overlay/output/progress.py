"""A progress line on stderr while a long audit runs: records read of how many (when it is
cheap to know: connectors/estimate.py), a percentage, and the phase ("reading",
"scoring and detecting contradictions", "writing report"); while contradictions are detected,
the facts whose blocks are walked of how many ("detecting contradictions (big: 412,000 of
1,000,000 facts, 41%)": at a million facts that walk is most of a first audit).

Only on a terminal: with stderr a pipe or a file (CI logs) nothing is drawn, and the line
appears only once the audit has taken DELAY seconds (MEMWATCH_PROGRESS_DELAY overrides it).
It redraws at most every REFRESH seconds, and always when the phase changes.
"""
from __future__ import annotations

import os
import sys
import time

from memwatch_overlay.overlay.output.console import OutputConsole as Console

DELAY_ENV = "MEMWATCH_PROGRESS_DELAY"


def _delay() -> float:
    try:
        return float(os.environ.get(DELAY_ENV, ""))
    except ValueError:
        return 0.7


class ScanProgress:
    """Called as ``progress(source, records_read, total=None, phase=None)`` by the audit, and
    as ``progress(source, facts_done, phase=..., of=facts_to_do)`` for a phase that counts."""

    REFRESH = 0.1

    def __init__(self, enabled: bool = True, stream=None):
        stream = sys.stderr if stream is None else stream
        self.enabled = enabled and bool(getattr(stream, "isatty", lambda: False)())
        self.stream = stream
        self.delay = _delay()
        self.started = time.monotonic()
        self.progress = None
        self.task = None
        self.source = ""
        self.total = None           # SizeEstimate of the current source
        self.records = 0
        self.phase = "reading"
        self.of: int | None = None  # what the current phase counts up to (its own total)
        self.drawn = 0.0

    def __call__(self, source: str, n: int, total=None, phase: str | None = None, of: int | None = None) -> None:
        if not self.enabled:
            return
        if source != self.source or total is not None:
            self.source, self.phase, self.of = source, "reading", None
            if total is not None:
                self.total = total
        self.records = n
        changed = phase is not None and phase != self.phase
        if phase is not None:
            self.phase, self.of = phase, of
        # (the phase's last count is always drawn: the line never stops short of its end)
        self._draw(force=changed or (of is not None and n >= of))

    def set_phase(self, phase: str) -> None:
        """A phase after the sources are read ("writing report")."""
        if self.enabled:
            self.phase, self.of = phase, None
            self._draw(force=True)

    def describe(self) -> str:
        """The line's text: `reading big: 12,000 of 112,000 records (11%)`."""
        if self.of is not None:
            pct = min(100, round(100 * self.records / self.of)) if self.of else 100
            return f"{self.phase} ({self.source}: {self.records:,} of {self.of:,} facts, {pct}%)"
        est = self.total
        if est is not None and est.records:
            of = f"{'' if est.exact else '~'}{est.records:,}"
            pct = min(100, round(100 * self.records / est.records))
            count = f"{self.records:,} of {of} records ({pct}%)"
        elif est is not None and est.size_bytes:
            count = f"{self.records:,} records (file {est.size_bytes / 1e6:,.1f} MB)"
        else:
            count = f"{self.records:,} records"
        return f"{self.phase} {self.source}: {count}" if self.phase == "reading" else \
            f"{self.phase} ({self.source}: {count.split(' (')[0]})" if self.source else self.phase

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.progress is None:
            if now - self.started < self.delay:
                return
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn
            self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                     console=Console(file=self.stream), transient=True, auto_refresh=False)
            self.progress.start()
            self.task = self.progress.add_task("", total=None)
            force = True
        if not force and now - self.drawn < self.REFRESH:
            return
        est = self.total
        total = est.records if est is not None and est.records and self.phase == "reading" else None
        if self.of:
            total = self.of
        self.progress.update(self.task, description=self.describe(), total=total,
                             completed=min(self.records, total) if total else 0)
        self.progress.refresh()
        self.drawn = now

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
