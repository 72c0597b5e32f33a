"""Markdown renderer and the GitHub job-summary writer."""
import io

from memwatch_overlay.overlay.output.formats import markdown
from reportgen import OnePass, make_facts, make_report


def render(report, **kw):
    out = io.StringIO()
    markdown.render(report, out, **kw)
    return out.getvalue()


def table_after(text, heading):
    """Rows (lists of cells) of the first table after `heading`."""
    lines = text.split(heading, 1)[1].splitlines()
    rows = []
    for line in lines[1:]:
        if not line.strip() and rows:
            break
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def test_summary_row_matches_report():
    report = make_report(make_facts(250, seed=21))
    s = report["summary"]
    rows = table_after(render(report), "gate passed")
    header, values = rows[0], rows[1]
    got = dict(zip(header[1:], values[1:]))
    for key in ("total", "fresh", "aging", "stale", "expired", "contradicted"):
        assert int(got[key]) == s[key]
    assert float(got["avg_freshness"]) == round(s["avg_freshness"], 3)
    assert float(got["stale_ratio"]) == round((s["stale"] + s["expired"]) / s["total"], 3)


def test_failed_gate_lists_violations():
    text = render(make_report(make_facts(20, seed=22), passed=False,
                              violations=["stale 9 > max_stale 3", "avg freshness 0.41 < min_avg_freshness 0.6"]))
    assert text.splitlines()[0] == "## memwatch-overlay audit: gate FAILED"
    section = text.split("### Violations", 1)[1]
    assert "- stale 9 > max_stale 3\n- avg freshness 0.41 < min_avg_freshness 0.6\n" in section


def test_stalest_facts_are_the_lowest_freshness_in_order():
    facts = make_facts(500, seed=23)
    report = make_report(facts)
    report["facts"] = OnePass(facts)
    text = render(report, top=7)
    rows = table_after(text, "### Stalest facts")
    refs = [r[0] for r in rows[1:]]
    expected = [f["ref"] for f in sorted(facts, key=lambda f: f["freshness"])[:7]]
    assert refs == expected
    assert "(7 of 500)" in text


def test_cells_escape_pipes_and_html():
    facts = make_facts(3, seed=24)
    text = render(make_report(facts))
    assert "value 0 \\| &lt;b&gt;" in text
    assert "<b>" not in text


def test_by_category_and_contradictions_sections():
    facts = make_facts(300, seed=25, contradicted_share=0.1)
    report = make_report(facts)
    text = render(report, top=3)
    rows = table_after(text, "### By category")
    assert {r[0]: int(r[1]) for r in rows[1:]} == {k: v["total"] for k, v in report["by_category"].items()}
    n = len(report["contradictions"])
    assert f"### Contradictions ({n})" in text
    assert f"... and {n - 3} more." in text


def test_append_step_summary(tmp_path):
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n")
    assert markdown.append_step_summary("# hi", {"GITHUB_STEP_SUMMARY": str(target)}) == target
    assert target.read_text() == "earlier step\n# hi\n"
    assert markdown.append_step_summary("# hi", {}) is None
