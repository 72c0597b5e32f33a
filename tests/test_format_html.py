"""HTML report: self-contained, figures equal the JSON's (static parse)."""
import io
import re
from collections import Counter

from memwatch_overlay.overlay.output.formats import html
from htmlread import Page
from reportgen import OnePass, make_facts, make_report

SUMMARY_IDS = {"total": "summary-total", "fresh": "summary-fresh", "aging": "summary-aging",
               "stale": "summary-stale", "expired": "summary-expired",
               "contradicted": "summary-contradicted", "avg_freshness": "summary-avg-freshness"}


def render(report, **kw):
    out = io.StringIO()
    html.render(report, out, **kw)
    return out.getvalue()


def check_figures(page: Page, report: dict, facts: list) -> None:
    """Shared with the browser test: every figure on the page equals the report's."""
    s = report["summary"]
    for key, ident in SUMMARY_IDS.items():
        value = s[key]
        if isinstance(value, float):
            assert float(page.attr(ident, "data-value")) == value
            assert page.text(ident) == f"{value:.3f}"
        else:
            assert int(page.text(ident)) == value, key
    ratio = (s["stale"] + s["expired"]) / s["total"]
    assert float(page.attr("summary-stale-ratio", "data-value")) == ratio
    assert page.attr("gate-status", "data-value") == ("passed" if report["passed"] else "failed")

    hist = Counter()
    for bar in page.bars:
        if "data-bin" in bar:
            hist[(bar["data-category"], int(bar["data-bin"]))] += int(bar["data-count"])
    expected = Counter((f["category"], min(9, int(f["freshness"] * 10))) for f in facts)
    assert +hist == expected

    horizons = {b["data-horizon"]: int(b["data-count"]) for b in page.bars if "data-horizon" in b}
    live = [f["days_until_expired"] for f in facts
            if f["label"] != "expired" and f["days_until_expired"] >= 0]
    assert sum(horizons.values()) == len(live)
    assert horizons["0-7 d"] == sum(1 for d in live if d <= 7)
    assert horizons["> 365 d"] == sum(1 for d in live if d > 365)

    stalest = [a["data-ref"] for a in page.row_attrs["stalest"][1:]]
    assert stalest == [f["ref"] for f in sorted(facts, key=lambda f: f["freshness"])[:len(stalest)]]
    soonest = [a["data-ref"] for a in page.row_attrs.get("soonest", [{}])[1:]]
    due = sorted((f for f in facts if f["label"] != "expired" and f["days_until_expired"] >= 0),
                 key=lambda f: f["days_until_expired"])
    # only what expires soon (within html.SOON_DAYS), soonest first
    assert soonest == [f["ref"] for f in due if f["days_until_expired"] <= html.SOON_DAYS][:len(soonest)]
    assert soonest, "the generated facts have some expiring within SOON_DAYS"

    rows = page.row_attrs["contradictions"][1:]
    assert [(r["data-older"], r["data-newer"], r["data-evidence"]) for r in rows] == [
        (c["older"], c["newer"], c["evidence"]) for c in report["contradictions"]]
    for name, summary in report["by_category"].items():
        row = [r for r in page.rows["by-category"] if r[0] == name][0]
        assert int(row[1]) == summary["total"]


def test_figures_equal_the_report():
    facts = make_facts(700, seed=41, contradicted_share=0.05)
    report = make_report(facts, passed=False, violations=["stale ratio 0.48 > max_stale_ratio 0.10"])
    report["facts"] = OnePass(facts)
    page = Page(render(report))
    check_figures(page, report, facts)
    assert [li for li in page.ids["violations"]["text"] if li.strip()] == report["violations"]


def test_self_contained_no_scripts_no_external_resources():
    text = render(make_report(make_facts(100, seed=42)))
    assert not re.search(r"<script|<link|<img|<iframe|@import|url\(", text, re.I)
    assert not re.search(r"(src|href)\s*=", text, re.I)
    assert "http" not in text


def test_user_text_is_escaped():
    facts = make_facts(5, seed=43)
    facts[0].update(label="expired", freshness=0.0, text='<script>alert(1)</script>')
    text = render(make_report(facts))
    assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_caps_contradictions_and_handles_no_facts():
    facts = make_facts(300, seed=44, contradicted_share=0.2)
    report = make_report(facts)
    text = render(report, max_contradictions=5)
    n = len(report["contradictions"])
    assert len(Page(text).rows["contradictions"]) == 1 + 5
    assert f"... and {n - 5} more." in text
    empty = Page(render(make_report([])))
    assert empty.text("summary-total") == "0"
    assert empty.bars == [b for b in empty.bars if "data-horizon" in b]


def test_contradictions_side_by_side_with_texts_and_the_suggested_update():
    facts = make_facts(20, seed=3, contradicted_share=0)
    report = make_report(facts)
    report["contradictions"] = [{"older": facts[0]["ref"], "newer": facts[1]["ref"], "kind": "value",
                                 "confidence": 0.9, "evidence": "employer: google -> anthropic",
                                 "older_text": "Works at Google", "newer_text": "Just joined Anthropic",
                                 "update": {"action": "UPDATE", "key": "employer", "old_value": "Google",
                                            "new_value": "Anthropic"}}]
    page = Page(render(report))
    [header, row] = page.rows["contradictions"]
    assert header == ["Older memory", "Newer memory", "Why", "Suggested update"]
    assert row[0].startswith("Works at Google") and row[0].endswith(facts[0]["ref"])
    assert row[1].startswith("Just joined Anthropic")
    assert "value 0.90: employer: google -> anthropic" in row[2]
    assert row[3].replace("\u2192", "->") == "UPDATE employerGoogle -> Anthropic"


def test_headers_in_words_rounded_days_and_tinted_labels():
    facts = make_facts(60, seed=12)
    page = Page(render(make_report(facts)))
    header = page.rows["stalest"][0]
    assert header == ["Memory", "Category", "Freshness", "Label", "Days until not fresh", "Days until expired",
                      "Age (days)", "Status"]
    assert page.rows["by-category"][0][:3] == ["Name", "Total", "Fresh"]
    for row in page.rows["stalest"][1:]:
        for cell in row[4:7]:
            assert cell == "" or re.fullmatch(r"<1|\d{1,3}(,\d{3})*", cell), cell
    labels = [c for c in page.cells if "label" in (c.get("class") or "").split()]
    assert labels and all(set(c["class"].split()) & {"fresh", "aging", "stale", "expired"} for c in labels)
    # every bar chart has a y axis with its top count
    assert page.text("histograms") and "yaxis" in render(make_report(facts))


def test_nothing_soon_says_so_with_the_next_expiry():
    facts = make_facts(30, seed=5)
    for f in facts:
        f.update(label="fresh", days_until_expired=1700.4, days_left=900.0)
    page = Page(render(make_report(facts)))
    assert page.text("soonest") == "Nothing expires within 90 days. The next one expires in 1,700 days."
