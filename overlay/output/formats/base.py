"""The renderer protocol: facts arrive one at a time, so one pass can feed several formats.

A renderer is built with the report (everything but its facts) and a text stream,
gets each fact through `add()`, and finishes the output in `close()`. `render()`
drives one renderer over ``report["facts"]``; `overlay.formats.render_many` drives
several over a single pass (a CI run writing SARIF, a job summary and annotations).
"""
from __future__ import annotations

from typing import Any, Mapping, TextIO

from memwatch_overlay.overlay.output.formats.digest import DEFAULT_PROBLEM_CAP, DEFAULT_TOP, Digest


class Renderer:
    """Base class: subclasses override `add` and `close`."""

    def __init__(self, report: Mapping[str, Any], stream: TextIO):
        self.report = report
        self.stream = stream

    def add(self, fact: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    @classmethod
    def render(cls, report: Mapping[str, Any], stream: TextIO, **options: Any) -> None:
        """Write `report` (the audit JSON contract) to `stream`, reading its facts once."""
        renderer = cls(report, stream, **options)
        for fact in report.get("facts") or ():
            renderer.add(fact)
        renderer.close()


class DigestRenderer(Renderer):
    """A renderer that needs only a bounded `Digest` of the facts; it writes in `write()`."""

    problem_cap = DEFAULT_PROBLEM_CAP
    top = DEFAULT_TOP

    def __init__(self, report: Mapping[str, Any], stream: TextIO, **options: Any):
        super().__init__(report, stream)
        self.digest = Digest(problem_cap=options.pop("problem_cap", self.problem_cap),
                             top=options.pop("top", self.top))
        self.options = options

    def add(self, fact: Mapping[str, Any]) -> None:
        self.digest.add(fact)

    def close(self) -> None:
        self.write(self.digest)

    def write(self, digest: Digest) -> None:
        raise NotImplementedError
