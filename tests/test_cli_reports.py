"""audit/report output formats, GitHub integration, --html and --trend, via the console script."""
import json
import re
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from htmlread import Page
from reportgen import problem_kinds, sarif_schema
from storegen import AS_OF, make_store, run, write_config


@pytest.fixture
def project(tmp_path):
    store = make_store(tmp_path / "agent.db", n=70, seed=5)
    return tmp_path, write_config(tmp_path, store)


def audit(cwd, config, *args, **env):
    return run("audit", "--config", config, "--as-of", AS_OF, *args, cwd=cwd, **env)


def contract(cwd, config):
    proc = audit(cwd, config, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_junit_output_file(project):
    cwd, config = project
    facts = contract(cwd, config)["facts"]
    proc = audit(cwd, config, "--format", "junit", "--junit-failures", "facts", "--output",
                 cwd / "out" / "junit.xml")
    assert proc.returncode == 0 and proc.stdout == ""
    root = ET.parse(cwd / "out" / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase") if c.get("classname") == "memwatch.bot"}
    assert set(cases) == {f["category"] for f in facts}
    for name, case in cases.items():
        bad = [f for f in facts if f["category"] == name and problem_kinds(f)]
        assert (case.find("failure") is not None) == bool(bad)
        assert case.get("file") == "agent.db"          # relative to the working folder


def test_sarif_on_stdout_validates(project):
    cwd, config = project
    facts = contract(cwd, config)["facts"]
    proc = audit(cwd, config, "--format", "sarif")
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    assert len(log["runs"][0]["results"]) == sum(len(problem_kinds(f)) for f in facts) > 0
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"agent.db"}


def test_markdown_and_html(project):
    cwd, config = project
    summary = contract(cwd, config)["summary"]
    md = audit(cwd, config, "--format", "markdown")
    assert md.returncode == 0 and md.stdout.startswith("## memwatch-overlay audit: no gate configured")
    assert f"| **all** | {summary['total']} | {summary['fresh']} |" in md.stdout
    proc = audit(cwd, config, "--format", "html", "--output", cwd / "report.html")
    assert proc.returncode == 0, proc.stderr
    page = Page((cwd / "report.html").read_text())
    assert int(page.text("summary-total")) == summary["total"]
    assert int(page.text("summary-expired")) == summary["expired"]


def test_github_actions_annotations_and_job_summary(project):
    cwd, config = project
    step_summary = cwd / "step_summary.md"
    step_summary.write_text("previous step\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step_summary)}
    # report on stdout: stdout stays a parseable report, workflow commands go to stderr
    proc = audit(cwd, config, "--format", "sarif", "--max-stale", 0, **env)
    assert proc.returncode == 1
    json.loads(proc.stdout)
    commands = [l for l in proc.stderr.splitlines() if l.startswith("::")]
    assert commands[0].startswith("::error title=memwatch gate::") and "> max_stale 0" in commands[0]
    assert any(l.startswith("::error title=memwatch%3A expired") and ",file=agent.db::" in l for l in commands)
    assert commands[-1].startswith("::notice ")
    text = step_summary.read_text()
    assert text.startswith("previous step\n## memwatch-overlay audit: gate FAILED")
    # report to a file: workflow commands on stdout, where GitHub documents them
    proc = audit(cwd, config, "--format", "junit", "--output", cwd / "j.xml", **env)
    assert [l for l in proc.stdout.splitlines() if l.startswith("::")]
    assert not [l for l in proc.stderr.splitlines() if l.startswith("::")]
    assert step_summary.read_text().count("## memwatch-overlay audit") == 2
    # --no-github turns both off
    quiet = audit(cwd, config, "--format", "json", "--no-github", **env)
    assert "::" not in quiet.stderr and step_summary.read_text().count("## memwatch") == 2


def test_no_annotations_outside_github_actions(project):
    cwd, config = project
    proc = audit(cwd, config, "--max-stale", 0)
    assert proc.returncode == 1
    assert "::error" not in proc.stdout + proc.stderr


def test_report_html_reads_the_overlay(project):
    cwd, config = project
    summary = contract(cwd, config)["summary"]
    (cwd / "agent.db").unlink()                     # report never reads the source
    proc = run("report", "--config", config, "--as-of", AS_OF, "--html", cwd / "site" / "memory.html", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""                          # --html alone prints no table
    page = Page((cwd / "site" / "memory.html").read_text())
    for key in ("total", "fresh", "aging", "stale", "expired", "contradicted"):
        assert int(page.text(f"summary-{key}")) == summary[key]
    assert [b for b in page.bars if "data-bin" in b]


def test_trend_follows_the_last_runs(project):
    cwd, config = project
    dates = ["2026-01-01", "2026-06-01", "2026-11-29", "2027-06-01"]
    ratios = []
    for day in dates:
        proc = run("audit", "--config", config, "--as-of", day, "--format", "json", cwd=cwd)
        s = json.loads(proc.stdout)["summary"]
        ratios.append((s["stale"] + s["expired"]) / s["total"])
    assert ratios == sorted(ratios) and ratios[0] < ratios[-1]      # time only ages the store
    proc = run("report", "--config", config, "--trend", "--runs", 3, "--format", "json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["sources"] == ["bot"]
    assert [r["as_of"][:10] for r in data["runs"]] == dates[1:]
    assert [r["stale_ratio"] for r in data["runs"]] == [round(x, 4) for x in ratios[1:]]
    assert data["runs"][0]["delta_stale_ratio"] is None
    assert data["runs"][2]["delta_stale_ratio"] == pytest.approx(ratios[3] - ratios[2], abs=1e-4)
    table = run("report", "--config", config, "--trend", cwd=cwd)
    assert table.returncode == 0
    assert all(d in table.stdout for d in dates)
    assert f"{ratios[0]:.1%} -> {ratios[-1]:.1%}" in table.stdout
    page = run("report", "--config", config, "--as-of", dates[-1], "--html", cwd / "t.html", cwd=cwd)
    assert page.returncode == 0
    html = (cwd / "t.html").read_text()
    points = re.findall(r'<circle class="point"[^>]*data-stale-ratio="([0-9.]+)"', html)
    assert [float(p) for p in points] == [round(x, 4) for x in ratios]


def test_trend_rejects_ci_formats(project):
    cwd, config = project
    proc = run("report", "--config", config, "--trend", "--format", "sarif", cwd=cwd)
    assert proc.returncode == 2 and "--trend prints table or json" in proc.stderr
