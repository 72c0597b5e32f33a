"""The CI gate's exit codes and messages, through the installed console script."""
import json

import pytest

from memwatch_overlay.overlay.store.database import OverlayStore
from storegen import AS_OF, make_store, run, write_config


@pytest.fixture
def project(tmp_path):
    store = make_store(tmp_path / "agent.db", n=80, seed=3)
    return tmp_path, store


def audit_json(cwd, config):
    proc = run("audit", "--config", config, "--as-of", AS_OF, "--format", "json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def gate_lines(proc):
    return [line[len("gate: "):] for line in proc.stderr.splitlines() if line.startswith("gate: ")]


def per(facts, field):
    out = {}
    for f in facts:
        if f["status"] in ("deleted", "forgotten"):
            continue
        s = out.setdefault(f[field], {"total": 0, "bad": 0, "fresh_sum": 0.0})
        s["total"] += 1
        s["bad"] += f["label"] in ("stale", "expired")
        s["fresh_sum"] += f["freshness"]
    return out


def test_flags_pass_at_the_figure_and_fail_past_it(project):
    cwd, store = project
    config = write_config(cwd, store)
    s = audit_json(cwd, config)["summary"]
    bad = s["stale"] + s["expired"]
    assert 0 < bad < s["total"]                      # the store has something to judge
    ratio = bad / s["total"]
    low_ratio, high_avg = round(ratio - 0.001, 4), round(s["avg_freshness"] + 0.001, 4)
    ok = run("audit", "--config", config, "--as-of", AS_OF, "--format", "json",
             "--max-stale-ratio", f"{ratio + 0.001:.4f}", "--max-stale", bad,
             "--max-contradictions", s["contradicted"],
             "--min-avg-freshness", f"{s['avg_freshness'] - 0.001:.4f}", cwd=cwd)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["passed"] is True and gate_lines(ok) == []

    fail = run("audit", "--config", config, "--as-of", AS_OF, "--format", "json",
               "--max-stale-ratio", low_ratio, "--max-stale", bad - 1,
               "--min-avg-freshness", high_avg, cwd=cwd)
    assert fail.returncode == 1, fail.stderr
    report = json.loads(fail.stdout)
    assert report["passed"] is False
    lines = gate_lines(fail)
    assert lines == report["violations"]
    assert lines == [f"stale ratio {ratio:.3f} > max_stale_ratio {low_ratio:g}",
                     f"{bad} stale or expired facts > max_stale {bad - 1}",
                     f"average freshness {s['avg_freshness']:.3f} < min_avg_freshness {high_avg:g}"]


def test_ci_table_gates_and_flags_override_it(project):
    cwd, store = project
    config = write_config(cwd, store, ci="[ci]\nmax_stale = 0\n")
    proc = run("audit", "--config", config, "--as-of", AS_OF, "--format", "json", cwd=cwd)
    assert proc.returncode == 1
    assert len(gate_lines(proc)) == 1 and "> max_stale 0" in gate_lines(proc)[0]
    relaxed = run("audit", "--config", config, "--as-of", AS_OF, "--format", "json",
                  "--max-stale", 10_000, cwd=cwd)
    assert relaxed.returncode == 0, relaxed.stderr


def test_per_category_limits(project):
    cwd, store = project
    facts = audit_json(cwd, write_config(cwd, store))["facts"]
    cats = per(facts, "category")
    worst = max(cats, key=lambda c: cats[c]["bad"])
    best = min(cats, key=lambda c: cats[c]["bad"])
    assert cats[worst]["bad"] > cats[best]["bad"]
    ci = (f"[ci]\nmax_stale = 100000\n\n[ci.categories.{worst}]\nmax_stale = {cats[worst]['bad'] - 1}\n\n"
          f"[ci.categories.{best}]\nmax_stale = {cats[best]['bad']}\n")
    proc = run("audit", "--config", write_config(cwd, store, ci=ci), "--as-of", AS_OF,
               "--format", "json", cwd=cwd)
    assert proc.returncode == 1, proc.stderr
    assert gate_lines(proc) == [f"{cats[worst]['bad']} stale or expired facts > max_stale "
                                f"{cats[worst]['bad'] - 1} (category {worst})"]


def test_per_source_limits(project):
    cwd, store = project
    facts = audit_json(cwd, write_config(cwd, store))["facts"]
    avg = round(per(facts, "source")["bot"]["fresh_sum"] / len(facts), 4)   # as the overlay rounds it
    limit = round(avg + 0.01, 3)
    ci = f"[ci.sources.bot]\nmin_avg_freshness = {limit}\n"
    proc = run("audit", "--config", write_config(cwd, store, ci=ci), "--as-of", AS_OF,
               "--format", "sarif", "--output", cwd / "out.sarif", cwd=cwd)
    assert proc.returncode == 1
    assert gate_lines(proc) == [f"average freshness {avg:.3f} < min_avg_freshness {limit:g} (source bot)"]
    log = json.loads((cwd / "out.sarif").read_text())
    assert log["runs"][0]["properties"]["violations"] == gate_lines(proc)


def test_table_format_shows_violations_once_on_stdout(project):
    cwd, store = project
    proc = run("audit", "--config", write_config(cwd, store), "--as-of", AS_OF, "--max-stale", 0, cwd=cwd)
    assert proc.returncode == 1
    assert "> max_stale 0" in proc.stdout and gate_lines(proc) == []


def test_report_gates_contradictions_from_the_overlay(project):
    cwd, store = project
    config = write_config(cwd, store)
    audit_json(cwd, config)
    with OverlayStore(cwd / "overlay.db") as overlay:       # plant one contradiction
        older, newer = overlay.fact_id("bot:memories:1"), overlay.fact_id("bot:memories:6")
        with overlay.transaction():
            overlay.add_contradiction(older, newer, "value", 0.9, "planted by the test", None, 0.0)
            overlay.apply_contradiction_status()
    proc = run("report", "--config", config, "--as-of", AS_OF, "--format", "json",
               "--max-contradictions", 0, cwd=cwd)
    assert proc.returncode == 1, proc.stderr
    assert gate_lines(proc) == ["1 contradicted facts > max_contradictions 0"]
    assert run("report", "--config", config, "--as-of", AS_OF, "--format", "json",
               "--max-contradictions", 1, cwd=cwd).returncode == 0


@pytest.mark.parametrize("args, needle", [
    (("--max-stale-ratio", "1.5"), "--max-stale-ratio"),
    (("--max-stale", "-1"), "--max-stale"),
    (("--min-avg-freshness", "x"), "--min-avg-freshness"),
])
def test_bad_flags_exit_2(project, args, needle):
    cwd, store = project
    proc = run("audit", store, *args, cwd=cwd)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def test_bad_ci_table_exits_2_naming_the_key(project):
    cwd, store = project
    config = write_config(cwd, store, ci="[ci.categories.employmnet]\nmax_stale = 1\n")
    proc = run("audit", "--config", config, cwd=cwd)
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: ") and "ci.categories.employmnet" in proc.stderr.splitlines()[0]
    assert "Traceback" not in proc.stderr
