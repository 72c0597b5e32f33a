"""A newer memory that restates an older one is a re-learn: the older fact's freshness
restarts from the newer one's time (issue 5a), and judging the pair again changes nothing."""
import sqlite3

from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import load_config

AS_OF = "2026-11-29"


def make_store(path, rows):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, user_id TEXT, k TEXT, v TEXT, created_at TEXT)")
        conn.executemany("INSERT INTO facts (user_id, k, v, created_at) VALUES (?, ?, ?, ?)", rows)


def config(tmp_path):
    (tmp_path / "memwatch.toml").write_text(
        '[[sources]]\nname = "bot"\nconnector = "sqlite"\npath = "agent.db"\ntable = "facts"\n'
        'id = "id"\nsubject = "user_id"\nkey = "k"\ntext = "v"\ncreated_at = "created_at"\n')
    return load_config(tmp_path / "memwatch.toml")


def labels(result):
    return {f["ref"]: (f["label"], f["status"], f["age_days"]) for f in result.iter_facts()}


def test_restated_fact_is_relearned_and_not_contradicted(tmp_path):
    make_store(tmp_path / "agent.db", [
        ("u1", "city", "Lives in Lagos", "2025-10-25 12:00:00"),        # 400 days: stale at a 365-day half-life
        ("u1", "city", "Still lives in Lagos", "2026-11-27 12:00:00"),  # 2 days: restates it
        ("u2", "city", "Lives in Accra", "2025-10-25 12:00:00"),        # the same age, never restated
    ])
    cfg = config(tmp_path)
    result = audit(config=cfg, as_of=parse_as_of(AS_OF))
    got = labels(result)
    result.close()
    assert got["bot:facts:3"][0] != "fresh"                   # the control ages as the formula says
    label, status, age = got["bot:facts:1"]
    assert status == "active" and label == "fresh" and age < 3   # re-learned 2 days ago

    again = audit(config=cfg, as_of=parse_as_of(AS_OF))       # judging again is idempotent
    assert labels(again) == got
    again.close()


def test_a_different_value_is_not_a_relearn(tmp_path):
    make_store(tmp_path / "agent.db", [
        ("u1", "city", "Lives in Lagos", "2025-10-25 12:00:00"),
        ("u1", "city", "Moved to Nairobi", "2026-11-27 12:00:00"),
    ])
    result = audit(config=config(tmp_path), as_of=parse_as_of(AS_OF))
    label, status, _ = labels(result)["bot:facts:1"]
    result.close()
    assert status == "contradicted" and label != "fresh"
