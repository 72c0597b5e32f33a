"""The memwatch README's quickstart, as docs/python-api.md gives it, against this package."""
import re
import subprocess
import sys
from pathlib import Path

from memwatch_overlay import MemWatch, TTLConfig

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"


def test_quickstart_finds_both_contradictions_and_suggests_two_updates(tmp_path):
    mw = MemWatch(db=str(tmp_path / "memwatch.db"), ttl_config=TTLConfig().set_half_life("employment", 90))
    mw.add("employer", "Google", category="employment")
    mw.add("city", "Jakarta", category="location")

    result = mw.check("I just moved to Surabaya for my new job at Anthropic")

    assert result.summary == "2 contradiction(s) detected. 0 stale memories."
    assert {c["update"]["key"] for c in result.contradictions} == {"employer", "city"}
    assert {c["older"] for c in result.contradictions} == {"memwatch:facts:employer", "memwatch:facts:city"}
    updates = {u.key: u for u in result.suggested_updates}
    assert [u.action for u in result.suggested_updates] == ["UPDATE", "UPDATE"]
    assert (updates["employer"].old_value, updates["employer"].new_value) == ("Google", "Anthropic")
    assert (updates["city"].old_value, updates["city"].new_value) == ("Jakarta", "Surabaya")
    assert updates["employer"].ref == "memwatch:facts:employer"
    assert result.stale_memories == []
    # check() stores nothing: the facts are as they were
    assert mw.get("employer").value == "Google" and mw.get("city").value == "Jakarta"
    mw.close()


def test_the_documented_quickstart_runs_as_written(tmp_path):
    text = DOC.read_text()
    code = re.search(r"## Quickstart\n\n```python\n(.*?)```", text, re.S).group(1)
    expected = re.search(r"prints\n\n```text\n(.*?)```", text, re.S).group(1)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected
    assert (tmp_path / "memwatch.db").exists()


def test_suggested_updates_are_mappings_as_memwatch_users_index_them(tmp_path):
    mw = MemWatch(db=str(tmp_path / "memwatch.db"))
    mw.add("employer", "Google", category="employment")
    result = mw.check("I just started my new job at Anthropic")
    [u] = result.suggested_updates
    assert (u["action"], u["memory_key"], u["old_value"], u["new_value"]) == ("UPDATE", "employer", "Google",
                                                                              "Anthropic")
    assert u["key"] == u.key == "employer" and u["ref"] == "memwatch:facts:employer"
    assert dict(u)["memory_key"] == "employer" and "confidence" in u
    # printed as the memwatch README shows a list of suggestions: dicts
    shown = repr(result.suggested_updates)
    assert shown.startswith("[{'action': 'UPDATE', 'memory_key': 'employer', 'old_value': 'Google', "
                            "'new_value': 'Anthropic'")
    assert str(u) == "UPDATE employer: 'Google' -> 'Anthropic'"
    with __import__("pytest").raises(KeyError):
        u["nope"]
    mw.close()
