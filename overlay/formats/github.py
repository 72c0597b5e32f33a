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

from .digest import Smallest, describe, problems, source_targets, trim

LIMIT = 10


def is_github_actions(environ: Mapping[str, str] | None = None) -> bool:
    """True when running as a GitHub Actions step (GITHUB_ACTIONS=true)."""
    env = os.environ if environ is None else environ
    return env.get("GITHUB_ACTIONS", "").lower() == "true"


def render(report: Mapping[str, Any], stream: TextIO, *, limit: int = LIMIT) -> None:
    """Write workflow-command lines for `report` (the audit JSON contract) to `stream`."""
    targets = source_targets(report)
    worst = {"error": Smallest(limit), "warning": Smallest(limit)}
    counts = {"error": 0, "warning": 0}
    for fact in report.get("facts") or ():
        kinds = problems(fact)
        if not kinds:
            continue
        level = "warning" if kinds == ["stale"] else "error"
        counts[level] += 1
        freshness = fact.get("freshness")
        key = freshness if isinstance(freshness, (int, float)) else 0.0
        worst[level].push(key, lambda: {**trim(fact), "_kinds": kinds})

    for violation in report.get("violations") or ():
        stream.write(command("error", str(violation), title="memwatch gate") + "\n")
    for level in ("error", "warning"):
        for fact in worst[level].sorted():
            props = {"title": f"memwatch: {'/'.join(fact['_kinds'])} memory fact"}
            target = targets.get(str(fact.get("source") or ""))
            if target and "://" not in target:
                props["file"] = target
            stream.write(command(level, describe(fact), **props) + "\n")
    summary = report.get("summary") or {}
    shown = sum(len(h.sorted()) for h in worst.values())
    stream.write(command(
        "notice",
        f"memwatch-overlay: {summary.get('total', 0)} facts, {summary.get('stale', 0)} stale, "
        f"{summary.get('expired', 0)} expired, {summary.get('contradicted', 0)} contradicted; "
        f"{shown} of {counts['error'] + counts['warning']} problem facts annotated",
        title="memwatch audit") + "\n")


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
