"""JUnit XML, in the shape Jenkins, GitLab and GitHub test reporters read.

Layout: one ``<testsuite>`` per source and one ``<testcase>`` per category in it
(classname ``memwatch.<source>``, name ``<category>``), and a last suite,
``memwatch.gate``, whose one test case fails with the violated thresholds when the
gate did not pass.

What counts as a failure (option ``failures``, the CLI's ``--junit-failures``):

- ``gate`` (default): only the gate's test case fails, so a CI server's red/green
  agrees with the exit code; a category holding stale, expired or contradicted facts
  lists them in its ``<system-out>`` (one per line) without failing.
- ``facts``: each such category's test case fails too, its ``<failure>`` text
  listing the facts.

Memory: facts are read once through `Digest`; per test case only the first
`problem_cap` problem facts are kept and printed, followed by "... and N more".
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, TextIO
from xml.etree import ElementTree as ET

from memwatch_overlay.overlay.output.formats.base import DigestRenderer
from memwatch_overlay.overlay.output.formats.digest import (
    Digest,
    describe,
    problems,
    source_targets,
)

GATE_SUITE = "memwatch.gate"
FAILURE_MODES = ("gate", "facts")


class JUnitRenderer(DigestRenderer):
    """JUnit XML; option `problem_cap`: facts listed per test case."""

    top = 0

    def write(self, digest: Digest) -> None:
        failures = self.options.get("failures") or "gate"
        if failures not in FAILURE_MODES:
            raise ValueError(f"junit failures must be one of {', '.join(FAILURE_MODES)}, not {failures!r}")
        _write(self.report, digest, self.stream, per_fact=failures == "facts")


render = JUnitRenderer.render


def _write(report: Mapping[str, Any], digest: Digest, stream: TextIO, per_fact: bool = False) -> None:
    targets = source_targets(report)
    as_of = str(report.get("as_of") or "")
    root = ET.Element("testsuites", name="memwatch-overlay")

    by_source: dict[str, list] = {}
    for (source, category), group in sorted(digest.groups.items()):
        by_source.setdefault(source, []).append((category, group))
    for source, cases in by_source.items():
        suite = _suite(root, f"memwatch.{source or 'default'}", as_of)
        target = targets.get(source)
        if target:
            _property(suite, "target", target)
        for category, group in cases:
            case = ET.SubElement(suite, "testcase", classname=f"memwatch.{source or 'default'}",
                                 name=category, time="0")
            if target and "://" not in target:
                case.set("file", target)
            if group.problem_count:
                _failure(case, group, as_failure=per_fact)
        _count(suite)

    gate = _suite(root, GATE_SUITE, as_of)
    for key, value in sorted((report.get("thresholds") or {}).items()):
        _property(gate, key, str(value))
    case = ET.SubElement(gate, "testcase", classname=GATE_SUITE, name="thresholds", time="0")
    if report.get("passed") is False:
        lines = list(report.get("violations") or ()) or ["the gate did not pass"]
        failure = ET.SubElement(case, "failure", type="threshold",
                                message=f"{len(lines)} threshold(s) exceeded")
        failure.text = "\n".join(lines)
    _count(gate)

    _count(root)
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")


def _suite(root: ET.Element, name: str, as_of: str) -> ET.Element:
    suite = ET.SubElement(root, "testsuite", name=name)
    stamp = _timestamp(as_of)
    if stamp:
        suite.set("timestamp", stamp)
    return suite


def _timestamp(as_of: str) -> str | None:
    """`as_of` as the naive UTC ``YYYY-MM-DDTHH:MM:SS`` the JUnit schema wants, or None."""
    try:
        moment = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


def _property(suite: ET.Element, name: str, value: str) -> None:
    """Add a <property>; <properties> is created on first use, before any test case."""
    props = suite.find("properties")
    if props is None:
        props = ET.Element("properties")
        suite.insert(0, props)
    ET.SubElement(props, "property", name=name, value=value)


def _failure(case: ET.Element, group, as_failure: bool = True) -> None:
    counts = {"stale": group.labels["stale"], "expired": group.labels["expired"],
              "contradicted": group.contradicted}
    parts = [f"{n} {kind}" for kind, n in counts.items() if n]
    message = f"{', '.join(parts)} of {group.total} facts"
    lines = [f"{'/'.join(problems(f))}: {describe(f)}" for f in group.problem_facts]
    if group.omitted:
        lines.append(f"... and {group.omitted} more")
    if not as_failure:
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join([message] + lines)
        return
    failure = ET.SubElement(case, "failure", type="/".join(k for k, n in counts.items() if n),
                            message=message)
    failure.text = "\n".join(lines)


def _count(node: ET.Element) -> None:
    """Set tests/failures/errors/skipped/time on a testsuite or testsuites element."""
    if node.tag == "testsuite":
        cases = node.findall("testcase")
        tests = len(cases)
        failures = sum(1 for c in cases if c.find("failure") is not None)
    else:
        suites = node.findall("testsuite")
        tests = sum(int(s.get("tests")) for s in suites)
        failures = sum(int(s.get("failures")) for s in suites)
    node.set("tests", str(tests))
    node.set("failures", str(failures))
    node.set("errors", "0")
    if node.tag == "testsuite":
        node.set("skipped", "0")
    node.set("time", "0")
