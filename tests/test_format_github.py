"""GitHub Actions workflow-command annotations."""
import io

from memwatch_overlay.overlay.output.formats import github
from reportgen import OnePass, make_facts, make_report, problem_kinds


def lines(report, **kw):
    out = io.StringIO()
    github.render(report, out, **kw)
    return out.getvalue().splitlines()


def test_is_github_actions():
    assert github.is_github_actions({"GITHUB_ACTIONS": "true"})
    assert not github.is_github_actions({"GITHUB_ACTIONS": "false"})
    assert not github.is_github_actions({})


def test_violations_then_worst_errors_then_worst_warnings_capped():
    facts = make_facts(400, seed=31)
    report = make_report(facts, passed=False, violations=["stale ratio 0.5 > max_stale_ratio 0.1"],
                         sources=[{"name": "bot", "connector": "sqlite", "target": "mem/agent.db"}])
    report["facts"] = OnePass(facts)
    out = lines(report, limit=4)
    assert out[0] == "::error title=memwatch gate::stale ratio 0.5 > max_stale_ratio 0.1"
    errors = [f for f in facts if set(problem_kinds(f)) & {"expired", "contradicted"}]
    warnings = [f for f in facts if problem_kinds(f) == ["stale"]]
    worst = lambda fs: [f["ref"] for f in sorted(fs, key=lambda f: f["freshness"])[:4]]
    err_lines = [l for l in out[1:] if l.startswith("::error ")]
    warn_lines = [l for l in out if l.startswith("::warning ")]
    assert [l.split("::")[2].split(" ")[0] for l in err_lines] == worst(errors)
    assert [l.split("::")[2].split(" ")[0] for l in warn_lines] == worst(warnings)
    for l in err_lines + warn_lines:
        ref = l.split("::")[2].split(" ")[0]
        if ref.startswith("bot:"):
            assert "file=mem/agent.db" in l
        else:
            assert "file=" not in l
    assert out[-1].startswith("::notice title=memwatch audit::")
    assert f"8 of {len(errors) + len(warnings)} problem facts annotated" in out[-1]


def test_command_escaping():
    line = github.command("warning", "50% done\nnext", title="a: b, c", file="x.db")
    assert line == "::warning title=a%3A b%2C c,file=x.db::50%25 done%0Anext"
    facts = make_facts(5, seed=32)
    facts[0].update(label="expired", text="two\nlines")
    assert all("\n" not in l for l in lines(make_report(facts)))


def test_absolute_store_path_becomes_repository_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    facts = make_facts(20, seed=33, sources=("bot",))
    report = make_report(facts, sources=[{"name": "bot", "connector": "sqlite",
                                          "target": str(tmp_path / "mem" / "agent.db")}])
    annotated = [l for l in lines(report) if l.startswith(("::error title=memwatch:", "::warning"))]
    assert annotated and all(",file=mem/agent.db::" in l for l in annotated)
