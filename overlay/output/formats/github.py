"""GitHub Actions workflow commands: ``::error`` / ``::warning`` / ``::notice`` lines.

The runner turns these lines into annotations on the run and the pull request. It
shows at most 10 errors and 10 warnings per step, so only the worst facts get a
line: expired and contradicted facts are errors, stale facts warnings, lowest
freshness first, `limit` of each; one ``::notice`` gives the totals. Every violated
gate threshold is an ``::error`` of its own.

Memory: two bounded heaps of `limit` facts each; facts are read once.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, TextIO

from memwatch_overlay.overlay.output.formats.base import Renderer
from memwatch_overlay.overlay.output.formats.digest import (
    Smallest,
    describe,
    problems,
    source_targets,
    trim,
)

LIMIT = 10


def is_github_actions(environ: Mapping[str, str] | None = None) -> bool:
    """True when running as a GitHub Actions step (GITHUB_ACTIONS=true)."""
    env = os.environ if environ is None else environ
    return env.get("GITHUB_ACTIONS", "").lower() == "true"


class GitHubRenderer(Renderer):
    """Workflow commands; option `limit`: facts annotated per level."""

    def __init__(self, report: Mapping[str, Any], stream: TextIO, *, limit: int = LIMIT):
        super().__init__(report, stream)
        self.worst = {"error": Smallest(limit), "warning": Smallest(limit)}
        self.counts = {"error": 0, "warning": 0}

    def add(self, fact: Mapping[str, Any]) -> None:
        kinds = problems(fact)
        if not kinds:
            return
        level = "warning" if kinds == ["stale"] else "error"
        self.counts[level] += 1
        freshness = fact.get("freshness")
        key = freshness if isinstance(freshness, (int, float)) else 0.0
        self.worst[level].push(key, lambda: {**trim(fact), "_kinds": kinds})

    def close(self) -> None:
        report, w = self.report, self.stream.write
        targets = source_targets(report)
        for violation in report.get("violations") or ():
            w(command("error", str(violation), title="memwatch gate") + "\n")
        shown = 0
        for level in ("error", "warning"):
            for fact in self.worst[level].sorted():
                shown += 1
                props = {"title": f"memwatch: {'/'.join(fact['_kinds'])} memory fact"}
                target = targets.get(str(fact.get("source") or ""))
                if target and "://" not in target:
                    props["file"] = target
                w(command(level, describe(fact), **props) + "\n")
        summary = report.get("summary") or {}
        w(command(
            "notice",
            f"memwatch-overlay: {summary.get('total', 0)} facts, {summary.get('stale', 0)} stale, "
            f"{summary.get('expired', 0)} expired, {summary.get('contradicted', 0)} contradicted; "
            f"{shown} of {sum(self.counts.values())} problem facts annotated",
            title="memwatch audit") + "\n")


render = GitHubRenderer.render


def command(level: str, message: str, **props: str) -> str:
    """One workflow command line, with GitHub's escaping of data and properties."""
    head = "::" + level
    if props:
        head += " " + ",".join(f"{k}={_escape_prop(str(v))}" for k, v in props.items())
    return head + "::" + _escape_data(message)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
