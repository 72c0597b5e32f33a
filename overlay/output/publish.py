"""Writing an audit result: the chosen --format plus the CI side outputs.

Side outputs: an HTML page (``--html``), and inside GitHub Actions (unless turned
off) workflow-command annotations and a Markdown job summary appended to
$GITHUB_STEP_SUMMARY. Every renderer of `overlay.formats` in play is fed from one
pass over the overlay's facts; `table` and `json` (from `overlay.output`) take a
pass of their own.

Where annotations go: GitHub documents workflow commands on stdout, so they are
written there after the report, unless stdout carries a machine-readable report
(json, junit, sarif, markdown or html without --output); then they go to stderr,
which the runner also scans, and the report on stdout stays parseable. Writing the
report with --output keeps them on stdout.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, TextIO

from memwatch_overlay.overlay.output.console import OutputConsole as Console

from memwatch_overlay.overlay.output import tables as output
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.output.formats import RENDERERS, render_many
from memwatch_overlay.overlay.output.formats.github import is_github_actions
from memwatch_overlay.overlay.output.formats.markdown import STEP_SUMMARY_ENV, append_step_summary
from memwatch_overlay.core.vocab import REPORT_FORMATS

FORMATS = REPORT_FORMATS


@dataclass
class Streams:
    """The process's streams and environment, injected so tests can capture them."""

    stdout: TextIO
    stderr: TextIO
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


def contract(result, trend: dict | None = None) -> dict:
    """`result` in the JSON contract's shape, facts as a one-pass iterator over the overlay,
    plus ``by_category`` / ``by_source`` summaries (and ``trend`` when given)."""
    report = dict(result.header())
    report["by_category"] = result.by("category")
    report["by_source"] = result.by("source")
    report["facts"] = result.iter_facts()
    report["contradictions"] = Contradictions(result)
    if trend is not None:
        report["trend"] = trend
    return report


class Contradictions:
    """A report's contradictions, read from the overlay each time they are iterated.

    A million facts can carry a million contradictions (about 1 KB each as dicts); the
    renderers list only the first few (markdown, html), count them, or look up one fact's
    (SARIF: `evidence_of`), so none of them needs all of them in memory at once.
    """

    def __init__(self, result):
        self.result = result
        self._count: int | None = None

    def __iter__(self) -> Iterator[dict]:
        return self.result.contradictions()

    def __len__(self) -> int:
        if self._count is None:
            self._count = self.result.count_contradictions()
        return self._count

    def text_of(self, ref: str) -> str | None:
        """A fact's text, by ref (the HTML page shows the texts of the contradictions it lists)."""
        row = self.result.store.fact_row(ref)
        return None if row is None else row["text"]

    def evidence_of(self, older_ref: str) -> list[dict]:
        """{newer, evidence} of the contradictions whose older side is `older_ref`."""
        return self.result.contradiction_evidence(older_ref)


def annotation_stream(fmt: str | None, output_path: str | None, streams: Streams) -> TextIO:
    """Where GitHub annotations go (see the module docstring)."""
    report_on_stdout = fmt not in (None, "table") and not output_path
    return streams.stderr if report_on_stdout else streams.stdout


def publish(result, fmt: str | None, streams: Streams, *, output_path: str | None = None,
            html_path: str | None = None, github: bool = True, trend: dict | None = None,
            junit_failures: str = "gate", summary_only: bool = False) -> list[str]:
    """Write `result` as `fmt` (None: no main report) to `output_path` or stdout, plus the
    side outputs; return notes for the user (files written)."""
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    notes: list[str] = []
    opened: list[TextIO] = []
    try:
        out = streams.stdout
        if fmt is not None and output_path:
            out = _open(output_path, opened, "--output")
            notes.append(f"wrote {fmt} report to {output_path}")
        if fmt == "table":
            # no_color None: rich follows NO_COLOR and the terminal; a file gets no colour
            output.render_table(result, Console(file=out, width=None if not output_path else 160,
                                                no_color=True if output_path else None))
        elif fmt == "json":
            output.write_json(result, out, summary_only=summary_only)

        outputs = []
        if fmt in RENDERERS:
            outputs.append((fmt, out, {"failures": junit_failures} if fmt == "junit" else {}))
        if html_path:
            outputs.append(("html", _open(html_path, opened, "--html"), {}))
            notes.append(f"wrote HTML report to {html_path}")
        summary = None
        if github and is_github_actions(streams.environ):
            outputs.append(("github", annotation_stream(fmt, output_path, streams), {}))
            if streams.environ.get(STEP_SUMMARY_ENV):
                summary = io.StringIO()
                outputs.append(("markdown", summary, {}))
        if outputs:
            render_many(contract(result, trend), outputs)
        if summary is not None:
            append_step_summary(summary.getvalue(), streams.environ)
    finally:
        for fh in opened:
            fh.close()
    return notes


def _open(path: str, opened: list[TextIO], flag: str) -> TextIO:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fh = target.open("w", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}", field=flag) from None
    opened.append(fh)
    return fh

