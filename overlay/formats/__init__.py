"""Renderers of the audit report (the design's JSON contract) for CI and for people.

Each module has ``render(report, stream, **options)``: `report` is the contract's
dict, whose ``facts`` may be a one-pass iterator; `stream` is a text stream. No
renderer holds every fact: see each module's docstring for what it keeps.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> render({"version": 1, "passed": True, "summary": {"total": 0}, "facts": []}, "markdown", out)
    >>> out.getvalue().splitlines()[0]
    '## memwatch-overlay audit: gate passed'
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, TextIO

from . import github, html, junit, markdown, sarif

RENDERERS: dict[str, Callable[..., None]] = {
    "junit": junit.render,
    "sarif": sarif.render,
    "markdown": markdown.render,
    "html": html.render,
    "github": github.render,
}


def render(report: Mapping[str, Any], fmt: str, stream: TextIO, **options: Any) -> None:
    """Write `report` to `stream` in format `fmt` (a key of RENDERERS)."""
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}; choose from {', '.join(RENDERERS)}") from None
    renderer(report, stream, **options)
