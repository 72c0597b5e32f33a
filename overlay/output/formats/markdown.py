"""Markdown: gate status, summary table, violations, per-category/per-source tables,
the stalest facts and the contradictions, for a pull request comment or a GitHub
job summary.

Memory: facts are read once through `Digest`, which keeps the `top` stalest.
Contradictions (a list in the contract) are printed up to `top` with a count of the rest.
"""
from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, TextIO

from memwatch_overlay.overlay.output.formats.base import DigestRenderer
from memwatch_overlay.overlay.output.formats.digest import (
    SUMMARY_KEYS,
    Digest,
    head_and_count,
    shorten,
    stale_ratio,
)

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


class MarkdownRenderer(DigestRenderer):
    """Markdown; option `top`: stalest facts and contradictions listed."""

    problem_cap = 0

    def write(self, digest: Digest) -> None:
        _write(self.report, digest, self.stream)


render = MarkdownRenderer.render


def _write(report: Mapping[str, Any], digest: Digest, stream: TextIO) -> None:
    top = digest.top
    summary = report.get("summary") or {}
    w = stream.write
    if report.get("gate") == "none":
        w("## memwatch-overlay audit: no gate configured\n\n")
    else:
        status = {True: "passed", False: "FAILED"}.get(report.get("passed"), "not evaluated")
        w(f"## memwatch-overlay audit: gate {status}\n\n")
    if report.get("as_of"):
        w(f"As of `{report['as_of']}`.\n\n")

    w(_table(["", *SUMMARY_KEYS, "stale_ratio"],
             [["**all**", *(_num(summary.get(k)) for k in SUMMARY_KEYS),
               _num(stale_ratio(summary))]]))

    violations = list(report.get("violations") or ())
    if violations:
        w("\n### Violations\n\n")
        w("".join(f"- {' '.join(str(v).split())}\n" for v in violations))
    for title, key in (("By category", "by_category"), ("By source", "by_source")):
        parts = report.get(key) or {}
        if parts:
            w(f"\n### {title}\n\n")
            w(_table(["name", *SUMMARY_KEYS, "stale_ratio"],
                     [[name, *(_num(s.get(k)) for k in SUMMARY_KEYS), _num(stale_ratio(s))]
                      for name, s in sorted(parts.items())]))

    stalest = digest.stalest
    if stalest:
        w(f"\n### Stalest facts ({len(stalest)} of {digest.seen})\n\n")
        w(_table(["ref", "category", "key", "text", "freshness", "label", "age_days", "status"],
                 [[f.get("ref"), f.get("category"), f.get("key"), shorten(f.get("text"), 60),
                   _num(f.get("freshness")), f.get("label"), _num(f.get("age_days"), 1),
                   f.get("status")] for f in stalest]))

    shown, total = head_and_count(report.get("contradictions") or (), top)
    if shown:
        w(f"\n### Contradictions ({total})\n\n")
        w(_table(["older", "newer", "kind", "confidence", "evidence"],
                 [[c.get("older"), c.get("newer"), c.get("kind"), _num(c.get("confidence")),
                   shorten(c.get("evidence"), 120)] for c in shown]))
        if total > len(shown):
            w(f"\n... and {total - len(shown)} more.\n")


def append_step_summary(markdown: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Append `markdown` to the file named by $GITHUB_STEP_SUMMARY; return it, or None if unset."""
    env = os.environ if environ is None else environ
    target = env.get(STEP_SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return path


def _table(header: list, rows: Iterable[list]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    """A table cell: pipes and HTML escaped, newlines flattened, None empty."""
    if value is None:
        return ""
    text = " ".join(str(value).split())
    return html.escape(text, quote=False).replace("|", "\\|")


def _num(value: Any, digits: int = 3) -> str:
    """Integers as they are, floats to `digits` decimals, anything else as text."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)
