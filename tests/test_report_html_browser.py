"""The HTML report rendered in headless Chromium: figures survive, the page is not blank.

Runs wherever Chromium is installed (tests/setup_chromium.sh installs Debian's
package). Under CI (CI=true) a missing Chromium fails the test instead of skipping it.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memwatch_overlay.overlay.output.formats import html, svg
from htmlread import Page
from pngutil import colour_counts
from reportgen import make_facts, make_report
from test_format_html import check_figures

pytestmark = pytest.mark.browser

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTH, HEIGHT = 1280, 1600        # a laptop; PHONE is a phone's CSS width
PHONE = 390


def chromium_path() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if path:
        return path
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("chromium is not installed; CI must run tests/setup_chromium.sh first")
    pytest.skip("chromium is not installed (tests/setup_chromium.sh installs it)")


def run_chromium(tmp_path: Path, page: Path, *mode: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    cmd = [chromium_path(), *FLAGS, f"--user-data-dir={profile}", *mode, page.as_uri()]
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def screenshot(tmp_path: Path, page: Path, width: int = WIDTH, height: int = HEIGHT) -> tuple[int, int, dict]:
    png = tmp_path / f"{page.stem}-{width}.png"
    run_chromium(tmp_path, page, f"--screenshot={png}", f"--window-size={width},{height}")
    return colour_counts(png.read_bytes())


def framed(tmp_path: Path, page: Path, width: int, height: int, script: str = "") -> Path:
    """A test-only page showing the report in an iframe `width` px wide (headless Chromium's
    window is at least 500 px; the iframe is the phone's viewport, media queries included)."""
    import html as html_mod
    doc = html_mod.escape(page.read_text(encoding="utf-8"), quote=True)
    wrapper = tmp_path / f"{page.stem}-framed-{width}.html"
    wrapper.write_text(f'''<!DOCTYPE html><html><body style="margin:0;background:#fff">
<iframe id="f" style="border:0;width:{width}px;height:{height}px" srcdoc="{doc}"></iframe>
<script>{script}</script></body></html>''', encoding="utf-8")
    return wrapper


PROBE = """
const f = document.getElementById("f");
f.addEventListener("load", () => {
  const d = f.contentDocument, w = f.contentWindow;
  const wide = [...d.querySelectorAll("table, figure, svg")]
    .filter(e => e.getBoundingClientRect().right > w.innerWidth + 1)
    .map(e => (e.id || e.tagName) + ":" + Math.round(e.getBoundingClientRect().right));
  document.body.setAttribute("data-probe", JSON.stringify({inner: w.innerWidth,
    scroll: d.documentElement.scrollWidth, wide: wide}));
});
"""


def layout_at(tmp_path: Path, page: Path, width: int) -> dict:
    """The report's widths as Chromium lays it out `width` px wide (measured from outside the
    report, which itself has no scripts)."""
    import html as html_mod
    import re
    probe = framed(tmp_path, page, width, HEIGHT, PROBE)
    dom = run_chromium(tmp_path, probe, "--dump-dom", "--virtual-time-budget=5000",
                       f"--window-size={max(width, 800)},{HEIGHT}").stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, dom[-300:]
    return json.loads(html_mod.unescape(found.group(1)))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    facts = make_facts(800, seed=51, contradicted_share=0.05)
    report = make_report(facts, passed=False, violations=["stale ratio 0.47 > max_stale_ratio 0.10"])
    report["trend"] = {"sources": ["bot", "crm"], "runs": [
        {"id": i, "as_of": f"2026-0{i}-01T00:00:00+00:00", "stale_ratio": r}
        for i, r in enumerate((0.12, 0.2, 0.31, 0.47), start=1)]}
    page = tmp / "report.html"
    with page.open("w", encoding="utf-8") as fh:
        html.render(report, fh)
    return tmp, page, report, facts


def test_dom_in_chromium_carries_the_reports_figures(rendered):
    tmp, page, report, facts = rendered
    dom = run_chromium(tmp, page, "--dump-dom").stdout
    parsed = Page(dom)
    assert "summary-total" in parsed.ids, dom[:500]
    check_figures(parsed, report, facts)
    assert [(int(p["data-run"]), float(p["data-stale-ratio"])) for p in parsed.points] == [
        (r["id"], r["stale_ratio"]) for r in report["trend"]["runs"]]


def test_screenshot_shows_the_charts(rendered):
    tmp, page, _, _ = rendered
    width, height, colours = screenshot(tmp, page)
    assert (width, height) == (WIDTH, HEIGHT)
    background = colours.most_common(1)[0][1]
    assert background < 0.9 * width * height          # not one flat colour
    assert len(colours) > 50                            # text antialiasing, bars, borders
    for _, _, hex_colour in svg.BAND_COLOURS:           # the histogram bars were painted
        assert colours[bytes.fromhex(hex_colour[1:])] > 200, hex_colour


@pytest.mark.parametrize("width", [WIDTH, PHONE])
def test_the_page_fits_a_laptop_and_a_phone(rendered, width):
    """No horizontal scrolling at 1280 px or 390 px: every table, chart and figure fits."""
    tmp, page, _, _ = rendered
    probe = layout_at(tmp, page, width)
    assert probe["inner"] == width
    assert probe["scroll"] <= width and probe["wide"] == [], probe


def test_a_page_too_wide_is_detected(tmp_path):
    """Control: the fit check fails on a table wider than the viewport."""
    page = tmp_path / "wide.html"
    page.write_text('<!DOCTYPE html><html><body><table id="t" style="width:900px"><tr><td>x</td></tr>'
                    '</table></body></html>')
    probe = layout_at(tmp_path, page, PHONE)
    assert probe["wide"] and probe["wide"][0].startswith("t:") and probe["scroll"] > PHONE


def test_screenshot_on_a_phone_shows_charts_and_tinted_labels(rendered):
    tmp, page, _, _ = rendered
    width, height, colours = screenshot(tmp, framed(tmp, page, PHONE, 3000), 500, 3000)
    assert (width, height) == (500, 3000)
    assert colours.most_common(1)[0][1] < 0.95 * width * height
    for _, _, hex_colour in svg.BAND_COLOURS:           # the histograms, scaled to the phone's width
        assert colours[bytes.fromhex(hex_colour[1:])] > 50, hex_colour


def test_label_cells_are_tinted_in_the_screenshot(rendered):
    tmp, page, _, _ = rendered
    _, _, colours = screenshot(tmp, page, WIDTH, 6000)
    tinted = [label for label, tint in html.LABEL_TINTS.items() if colours[bytes.fromhex(tint[1:])] > 100]
    assert len(tinted) >= 2, tinted      # the stalest facts are expired and stale at least


def test_blank_page_is_detected_as_blank(tmp_path):
    """Control: the checks above fail on an empty page."""
    page = tmp_path / "blank.html"
    page.write_text("<!DOCTYPE html><html><body></body></html>")
    width, height, colours = screenshot(tmp_path, page)
    assert colours.most_common(1)[0][1] >= 0.99 * width * height
    assert all(colours[bytes.fromhex(c[1:])] == 0 for _, _, c in svg.BAND_COLOURS)


def test_page_from_the_cli_matches_the_same_audits_json(tmp_path):
    """One audit writes JSON and HTML; Chromium's DOM of the page carries the JSON's figures."""
    from storegen import AS_OF, make_store, run, write_config
    config = write_config(tmp_path, make_store(tmp_path / "agent.db", n=120, seed=9))
    proc = run("audit", "--config", config, "--as-of", AS_OF, "--format", "json",
               "--output", tmp_path / "audit.json", "--html", tmp_path / "audit.html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "audit.json").read_text())
    page = Page(run_chromium(tmp_path, tmp_path / "audit.html", "--dump-dom").stdout)
    for key, value in report["summary"].items():
        if key == "deleted":
            continue
        ident = "summary-" + key.replace("_", "-")
        assert float(page.attr(ident, "data-value")) == value, key
    per_category = {}
    for f in report["facts"]:
        per_category[f["category"]] = per_category.get(f["category"], 0) + 1
    hist = {}
    for bar in page.bars:
        if "data-bin" in bar:
            hist[bar["data-category"]] = hist.get(bar["data-category"], 0) + int(bar["data-count"])
    assert hist == per_category
