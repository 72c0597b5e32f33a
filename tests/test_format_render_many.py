"""render_many: several formats from one pass equal each format rendered alone."""
import io
import re

import pytest

from memwatch_overlay.overlay.output.formats import RENDERERS, render, render_many
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


def test_deleted_and_forgotten_facts_are_not_reported():
    facts = make_facts(200, seed=72, contradicted_share=0)
    gone = [f for f in facts if f["label"] == "expired"][:10]
    for i, f in enumerate(gone):
        f["status"] = "deleted" if i % 2 else "forgotten"
    live = [f for f in facts if f not in gone]
    for fmt in RENDERERS:
        with_gone, without = io.StringIO(), io.StringIO()
        render(make_report(live) | {"facts": facts}, fmt, with_gone)
        render(make_report(live), fmt, without)
        assert with_gone.getvalue() == without.getvalue(), fmt
        for f in gone:
            assert not re.search(re.escape(f["ref"]) + r"(?![0-9])", with_gone.getvalue()), (fmt, f["ref"])
