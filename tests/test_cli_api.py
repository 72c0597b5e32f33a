"""The memwatch README's CLI sequence (add, check, report, refresh, forget, stats) under memwatch-overlay."""
import json

from memwatch_overlay import MemWatch
from storegen import run


def test_cli_sequence(tmp_path):
    db = "memwatch.db"
    proc = run("add", "employer", "Google", "--category", "employment", "--db", db, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("added memwatch:facts:employer (employment, freshness 1.00")
    assert run("add", "city", "Jakarta", "--db", db, cwd=tmp_path).returncode == 0       # rules: location

    proc = run("check", "I just moved to Surabaya for my new job at Anthropic", "--db", db, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "2 contradiction(s) detected. 0 stale memories."
    assert "memwatch:facts:employer" in proc.stdout and "Anthropic" in proc.stdout and "Surabaya" in proc.stdout

    proc = run("check", "I just moved to Surabaya for my new job at Anthropic", "--db", db, "--format", "json",
               cwd=tmp_path)
    data = json.loads(proc.stdout)
    assert data["applied"] == [] and data["summary"] == "2 contradiction(s) detected. 0 stale memories."
    assert {(u["action"], u["key"], u["old_value"], u["new_value"]) for u in data["suggested_updates"]} == {
        ("UPDATE", "employer", "Google", "Anthropic"), ("UPDATE", "city", "Jakarta", "Surabaya")}

    proc = run("report", "--db", db, "--format", "json", cwd=tmp_path)
    facts = {f["ref"]: f for f in json.loads(proc.stdout)["facts"]}
    assert facts["memwatch:facts:city"]["category"] == "location"
    assert facts["memwatch:facts:employer"]["text"] == "Google"          # check stored nothing

    proc = run("refresh", "city", "--db", db, cwd=tmp_path)
    assert (proc.returncode, proc.stdout.strip()) == (0, "refreshed 1 fact(s)")
    with MemWatch(db=str(tmp_path / db)) as mw:
        assert mw.get("city").confidence > 0.9            # one confirmation

    proc = run("forget", "employer", "--db", db, cwd=tmp_path)
    assert (proc.returncode, proc.stdout.strip()) == (0, "forgot 1 fact(s)")
    proc = run("stats", "--db", db, "--format", "json", cwd=tmp_path)
    stats = json.loads(proc.stdout)
    assert stats["summary"]["total"] == 1 and list(stats["by_category"]) == ["location"]
    assert run("stats", "--db", db, cwd=tmp_path).returncode == 0

    proc = run("forget", "employer", "--db", db, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("Error: REF: no fact 'employer'")


def test_check_apply_updates_the_added_facts(tmp_path):
    db = "memwatch.db"
    run("add", "employer", "Google", "--subject", "ana", "--db", db, cwd=tmp_path)
    proc = run("check", "I started a new job at Stripe", "--subject", "ana", "--apply", "--db", db, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "applied: memwatch:facts:ana:employer" in proc.stdout
    with MemWatch(db=str(tmp_path / db), subject="ana") as mw:
        assert mw.get("employer").value == "Stripe"
    proc = run("check", "I started a new job at Stripe", "--subject", "ana", "--db", db, cwd=tmp_path)
    assert proc.stdout.splitlines()[-1].startswith("0 contradiction(s) detected.")


def test_add_errors_are_one_line(tmp_path):
    proc = run("add", "hobby", "chess", "--category", "hobbyz", "--db", "m.db", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown category 'hobbyz'" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
