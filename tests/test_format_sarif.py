"""SARIF 2.1.0 renderer: valid against the official schema, one result per problem."""
import io
import json

import jsonschema
import pytest

from memwatch_overlay.overlay.output.formats import sarif
from reportgen import OnePass, make_facts, make_report, problem_kinds, sarif_schema

SCHEMA = sarif_schema()


def render(report, **kw):
    out = io.StringIO()
    sarif.render(report, out, **kw)
    return json.loads(out.getvalue())


def validate(log):
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(log)


def test_validates_against_the_sarif_schema():
    sources = [{"name": "bot", "connector": "sqlite", "target": "stores/agent.db"},
               {"name": "crm", "connector": "postgres", "target": "postgresql://u:pw@h:5432/crm"}]
    log = render(make_report(make_facts(400, seed=11), sources=sources, passed=False,
                             violations=["stale ratio 0.42 > max_stale_ratio 0.10"]))
    validate(log)
    assert log["version"] == "2.1.0"


def test_schema_rejects_a_broken_log():
    """The validation above can fail: a log missing a result's message is rejected."""
    log = render(make_report(make_facts(50, seed=12)))
    del log["runs"][0]["results"][0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        validate(log)


def test_one_result_per_fact_and_problem_with_rule_and_level():
    facts = make_facts(300, seed=13)
    log = render(make_report(facts))
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["properties"]["tags"][1] for r in rules] == ["stale", "expired", "contradicted"]
    expected = sorted((f["ref"], k) for f in facts for k in problem_kinds(f))
    got = []
    for res in run["results"]:
        rule = rules[res["ruleIndex"]]
        assert rule["id"] == res["ruleId"]
        assert res["level"] == rule["defaultConfiguration"]["level"]
        ref = res["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]
        got.append((ref, rule["properties"]["tags"][1]))
    assert sorted(got) == expected
    levels = {rules[r["ruleIndex"]]["properties"]["tags"][1]: r["level"] for r in run["results"]}
    assert levels == {"stale": "warning", "expired": "error", "contradicted": "error"}


def test_locations_point_at_store_and_row(tmp_path):
    facts = make_facts(60, seed=14, sources=("bot", "pg"))
    store = tmp_path / "memory" / "agent db.sqlite"
    sources = [{"name": "bot", "connector": "sqlite", "target": str(store)},
               {"name": "pg", "connector": "postgres",
                "target": "postgresql://agent:hunter2@db:5432/mem?sslmode=require"}]
    out = io.StringIO()
    sarif.render(make_report(facts, sources=sources), out, root=tmp_path)
    assert "hunter2" not in out.getvalue()
    log = json.loads(out.getvalue())
    validate(log)
    by_ref = {f["ref"]: f for f in facts}
    for res in log["runs"][0]["results"]:
        loc = res["locations"][0]
        fact = by_ref[loc["logicalLocations"][0]["fullyQualifiedName"]]
        uri = loc["physicalLocation"]["artifactLocation"]["uri"]
        if fact["source"] == "bot":
            assert uri == "memory/agent%20db.sqlite"
        else:
            assert uri == "postgresql://agent:***@db:5432/mem?sslmode=require"
        assert loc["logicalLocations"][0]["name"] == f"id={fact['pk']['id']}"
        assert res["partialFingerprints"]["memwatchRef/v1"].startswith(fact["ref"] + "#")


def test_contradicted_results_relate_to_the_newer_fact_with_evidence():
    facts = make_facts(200, seed=15, contradicted_share=0.2)
    report = make_report(facts)
    evidence = {c["older"]: c for c in report["contradictions"]}
    log = render(report)
    contradicted = [r for r in log["runs"][0]["results"] if r["ruleId"] == "MW003"]
    assert len(contradicted) == len(evidence) > 0
    for res in contradicted:
        ref = res["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]
        related = res["relatedLocations"]
        assert [r["logicalLocations"][0]["fullyQualifiedName"] for r in related] == [evidence[ref]["newer"]]
        assert evidence[ref]["evidence"] in related[0]["message"]["text"]


def test_streams_once_and_caps_results():
    facts = make_facts(1000, seed=16)
    total = sum(len(problem_kinds(f)) for f in facts)
    report = make_report(facts)
    report["facts"] = OnePass(facts)
    log = render(report, max_results=25)
    validate(log)
    run = log["runs"][0]
    assert len(run["results"]) == 25
    assert run["properties"]["omitted_results"] == total - 25


def test_no_problem_facts_gives_an_empty_valid_run():
    facts = [f for f in make_facts(100, seed=17, contradicted_share=0) if f["label"] in ("fresh", "aging")]
    log = render(make_report(facts))
    validate(log)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["properties"]["summary"]["total"] == len(facts)
