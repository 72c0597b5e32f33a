"""render_many: several formats from one pass equal each format rendered alone."""
import io

import pytest

from memwatch_overlay.overlay.formats import RENDERERS, render, render_many
from reportgen import OnePass, make_facts, make_report


def test_one_pass_feeds_every_format_identically():
    facts = make_facts(400, seed=71, contradicted_share=0.1)
    alone = {}
    for fmt in RENDERERS:
        out = io.StringIO()
        render(make_report(facts, passed=False, violations=["x > y"]), fmt, out)
        alone[fmt] = out.getvalue()
    report = make_report(facts, passed=False, violations=["x > y"])
    report["facts"] = OnePass(facts)
    streams = {fmt: io.StringIO() for fmt in RENDERERS}
    render_many(report, [(fmt, s, {}) for fmt, s in streams.items()])
    for fmt, s in streams.items():
        assert s.getvalue() == alone[fmt], fmt


def test_unknown_format_names_the_known_ones():
    with pytest.raises(ValueError, match="junit, sarif, markdown, html, github"):
        render(make_report([]), "pdf", io.StringIO())
