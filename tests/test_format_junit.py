"""JUnit XML renderer: shape CI servers read, failures per source and category."""
import io
from xml.etree import ElementTree as ET

import junitparser

from memwatch_overlay.overlay.output.formats import junit
from reportgen import OnePass, make_facts, make_report, problem_kinds


def render(report, **kw):
    """Per-fact failures (--junit-failures facts), which most tests here look at."""
    out = io.StringIO()
    kw.setdefault("failures", "facts")
    junit.render(report, out, **kw)
    return out.getvalue()


def groups(facts):
    out = {}
    for f in facts:
        out.setdefault((f["source"], f["category"]), []).append(f)
    return out


def test_one_testcase_per_source_and_category_failing_on_problem_facts():
    facts = make_facts(300, seed=1)
    xml = render(make_report(facts), problem_cap=1000)
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    expected = groups(facts)
    seen = {}
    for suite in root.findall("testsuite"):
        if suite.get("name") == junit.GATE_SUITE:
            continue
        source = suite.get("name").removeprefix("memwatch.")
        for case in suite.findall("testcase"):
            seen[(source, case.get("name"))] = case
    assert set(seen) == set(expected)
    for key, case in seen.items():
        bad = [f for f in expected[key] if problem_kinds(f)]
        failure = case.find("failure")
        assert (failure is not None) == bool(bad), key
        if bad:
            listed = [line.split(": ", 1)[1].split(" ")[0] for line in failure.text.splitlines()]
            assert listed == [f["ref"] for f in bad]
            assert f"of {len(expected[key])} facts" in failure.get("message")


def test_counts_are_consistent_and_readable_by_a_junit_reader(tmp_path):
    facts = make_facts(200, seed=2)
    path = tmp_path / "memwatch.xml"
    path.write_text(render(make_report(facts)), encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(path))
    cases = [case for suite in xml for case in suite]
    failed = [c for c in cases if any(isinstance(r, junitparser.Failure) for r in c.result)]
    n_groups = len(groups(facts))
    assert len(cases) == n_groups + 1       # + the gate's test case
    bad_groups = sum(1 for fs in groups(facts).values() if any(problem_kinds(f) for f in fs))
    assert len(failed) == bad_groups
    root = ET.parse(path).getroot()
    assert int(root.get("tests")) == len(cases)
    assert int(root.get("failures")) == len(failed)
    for suite in root.findall("testsuite"):
        assert int(suite.get("tests")) == len(suite.findall("testcase"))
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))


def test_gate_case_fails_with_each_violation_line():
    facts = make_facts(50, seed=3)
    violations = ["stale ratio 0.420 > max_stale_ratio 0.100", "contradictions 3 > max_contradictions 0"]
    root = ET.fromstring(render(make_report(facts, passed=False, violations=violations)))
    gate = [s for s in root.findall("testsuite") if s.get("name") == junit.GATE_SUITE][0]
    failure = gate.find("testcase/failure")
    assert failure.text.splitlines() == violations
    props = {p.get("name"): p.get("value") for p in gate.findall("properties/property")}
    assert props == {"max_stale_ratio": "0.1"}

    passing = ET.fromstring(render(make_report(facts, passed=True)))
    gate = [s for s in passing.findall("testsuite") if s.get("name") == junit.GATE_SUITE][0]
    assert gate.find("testcase/failure") is None


def test_streams_facts_once_and_caps_listed_facts():
    facts = make_facts(2000, seed=4, sources=("bot",), categories=("general",))
    bad = [f for f in facts if problem_kinds(f)]
    report = make_report(facts)
    report["facts"] = OnePass(facts)
    root = ET.fromstring(render(report, problem_cap=5))
    failure = root.find("testsuite/testcase/failure")
    lines = failure.text.splitlines()
    assert len(lines) == 6
    assert lines[-1] == f"... and {len(bad) - 5} more"


def test_timestamp_is_naive_utc():
    report = make_report(make_facts(5, seed=6))
    report["as_of"] = "2026-03-01T09:30:00+02:00"
    root = ET.fromstring(render(report))
    assert {s.get("timestamp") for s in root.findall("testsuite")} == {"2026-03-01T07:30:00"}


def test_file_attribute_names_a_file_store():
    facts = make_facts(10, seed=8, sources=("bot",))
    sources = [{"name": "bot", "connector": "sqlite", "target": "memory/agent.db"}]
    root = ET.fromstring(render(make_report(facts, sources=sources)))
    assert {c.get("file") for c in root.iter("testcase") if c.get("classname") == "memwatch.bot"} == {"memory/agent.db"}


def test_target_and_special_characters_survive_xml():
    facts = make_facts(30, seed=5, sources=("bot",))
    facts[0].update(label="expired", freshness=0.01, text='<x> & "quoted" ]]>')
    sources = [{"name": "bot", "connector": "postgres",
                "target": "postgresql://memwatch:s3cret@db.local:5432/agent"}]
    xml = render(make_report(facts, sources=sources))
    assert "s3cret" not in xml
    root = ET.fromstring(xml)
    suite = root.find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert props["target"] == "postgresql://memwatch:***@db.local:5432/agent"
    assert suite.find("testcase").get("file") is None     # a DSN is not a file
    assert '<x> & "quoted" ]]>' in "".join(f.text for f in root.iter("failure"))


def test_by_default_only_the_gate_fails_and_problem_facts_are_listed_as_output():
    facts = make_facts(200, seed=9)
    bad_groups = sum(1 for fs in groups(facts).values() if any(problem_kinds(f) for f in fs))
    assert bad_groups > 0
    out = io.StringIO()
    junit.render(make_report(facts, passed=True), out)        # the default: failures = the gate's
    root = ET.fromstring(out.getvalue())
    assert root.get("failures") == "0"
    listed = [c for c in root.iter("testcase") if c.find("system-out") is not None]
    assert len(listed) == bad_groups and "of " in listed[0].find("system-out").text

    out = io.StringIO()
    junit.render(make_report(facts, passed=False, violations=["stale ratio 0.4 > max_stale_ratio 0.1"]), out)
    root = ET.fromstring(out.getvalue())
    assert root.get("failures") == "1"
    assert [c.get("classname") for c in root.iter("testcase") if c.find("failure") is not None] == [junit.GATE_SUITE]
