"""Renderers of the audit report (the design's JSON contract) for CI and for people.

`report` is the contract's dict, whose ``facts`` may be a one-pass iterator; no
renderer holds every fact (each module's docstring says what it keeps). `render`
writes one format; `render_many` writes several from a single pass over the facts.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> render({"version": 1, "passed": True, "summary": {"total": 0}, "facts": []}, "markdown", out)
    >>> out.getvalue().splitlines()[0]
    '## memwatch-overlay audit: gate passed'
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, TextIO

from memwatch_overlay.overlay.output.formats.base import Renderer
from memwatch_overlay.overlay.output.formats.github import GitHubRenderer
from memwatch_overlay.overlay.output.formats.html import HTMLRenderer
from memwatch_overlay.overlay.output.formats.junit import JUnitRenderer
from memwatch_overlay.overlay.output.formats.lines import CsvRenderer, NdjsonRenderer
from memwatch_overlay.overlay.output.formats.markdown import MarkdownRenderer
from memwatch_overlay.overlay.output.formats.sarif import SarifRenderer

RENDERERS: dict[str, type[Renderer]] = {
    "junit": JUnitRenderer,
    "sarif": SarifRenderer,
    "markdown": MarkdownRenderer,
    "html": HTMLRenderer,
    "github": GitHubRenderer,
    "ndjson": NdjsonRenderer,
    "csv": CsvRenderer,
}


def renderer_class(fmt: str) -> type[Renderer]:
    """The renderer of format `fmt`; ValueError names the known formats."""
    try:
        return RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}; choose from {', '.join(RENDERERS)}") from None


def render(report: Mapping[str, Any], fmt: str, stream: TextIO, **options: Any) -> None:
    """Write `report` to `stream` in format `fmt` (a key of RENDERERS)."""
    render_many(report, [(fmt, stream, options)])


def render_many(report: Mapping[str, Any],
                outputs: Iterable[tuple[str, TextIO, Mapping[str, Any]]]) -> None:
    """Write `report` in several formats, reading ``report["facts"]`` once.

    `outputs` holds (format, stream, options) triples.
    """
    renderers = [renderer_class(fmt)(report, stream, **dict(opts)) for fmt, stream, opts in outputs]
    for fact in report.get("facts") or ():
        for renderer in renderers:
            renderer.add(fact)
    for renderer in renderers:
        renderer.close()
