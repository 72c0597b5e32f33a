"""Write-back to SQLite through the library: plan, apply, undo, validation, exact restore."""
from __future__ import annotations

import re
import sqlite3

import pytest

from memwatch_overlay.overlay.store.actions import ActionLog
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback.apply import apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.overlay.writeback.undo import undo_actions
from memwatch_overlay.rules.config import load_config
from wb_support import AS_OF, TYPED_SOURCE, file_digest, make_typed_store, snapshot, write_config

AS_OF_TS = parse_as_of(AS_OF)
EXPIRED_IDS = {(1,), (3,), (5,)}


@pytest.fixture
def typed(tmp_path):
    make_typed_store(tmp_path / "facts.db")
    return tmp_path


def _config(tmp_path, actions: str):
    return load_config(write_config(tmp_path, TYPED_SOURCE + actions))


SET_MANY = """
[[actions]]
when = "expired"
do = "set"
set = { expires_at = "now", note = "memwatch: {label} ({freshness:.2f})", score = "{freshness}", flag = true, anything = "gone" }
"""


def test_plan_writes_nothing_and_lists_old_and_new_values(typed):
    before = file_digest(typed / "facts.db")
    plan = plan_actions(_config(typed, SET_MANY), AS_OF_TS, now=parse_as_of("2026-11-29T16:00:00.5"))
    assert file_digest(typed / "facts.db") == before
    assert {int(c.pk["id"]) for c in plan.writes} == {1, 3, 5}
    by_id = {int(c.pk["id"]): c for c in plan.writes}
    # NULL expiry takes the format other rows of the column use ("…T…Z")
    assert by_id[1].old["expires_at"] is None
    assert by_id[1].values["expires_at"] == "2026-11-29T16:00:00Z"
    assert by_id[3].old["expires_at"] == "2030-01-01T00:00:00Z"
    assert by_id[1].values["note"].startswith("memwatch: expired (")
    assert isinstance(by_id[1].values["score"], float) and by_id[1].values["score"] < 0.3
    assert by_id[1].old["anything"] == 42 and by_id[1].values["anything"] == "gone"
    with OverlayStore(typed / ".memwatch" / "overlay.db") as store:
        assert store.conn.execute("SELECT count(*) FROM actions").fetchone()[0] == 0


def test_apply_then_undo_restores_every_row_exactly_types_included(typed):
    db = typed / "facts.db"
    original = snapshot(db, "facts")
    plan = plan_actions(_config(typed, SET_MANY), AS_OF_TS)
    result = apply_plan(plan)
    assert len(result.applied) == 3 and not result.skipped
    changed = snapshot(db, "facts")
    for key, row in changed.items():
        if key in EXPIRED_IDS:
            assert row["note"][0] == "text" and row["note"][1].startswith("memwatch: expired")
            assert row["flag"] == ("integer", 1)
            assert row["score"][0] == "real"
            assert row["anything"] == ("text", "gone")
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["expires_at"][1])
        else:
            assert row == original[key]
    undone = undo_actions(None, ids=[i for i, _ in result.applied], overlay_path=str(plan.overlay_path))
    assert len(undone.restored) == 3 and not undone.skipped
    assert snapshot(db, "facts") == original   # blob, real, integer, text and NULL all back as they were


def test_undo_since_and_before_images_are_typed(typed):
    db = typed / "facts.db"
    original = snapshot(db, "facts")
    plan = plan_actions(_config(typed, SET_MANY), AS_OF_TS)
    result = apply_plan(plan)
    with OverlayStore(plan.overlay_path) as store:
        logged = ActionLog(store).get(result.applied[0][0])
    assert logged.before["raw"][0] == "blob" and logged.before["anything"][0] in ("integer", "text", "real", "blob")
    assert logged.after["flag"] == ["integer", 1]
    undone = undo_actions(None, since=result.run_at, overlay_path=str(plan.overlay_path))
    assert sorted(a.id for a, _ in undone.restored) == sorted(i for i, _ in result.applied)
    assert snapshot(db, "facts") == original
    again = undo_actions(None, ids=[result.applied[0][0]], overlay_path=str(plan.overlay_path))
    assert again.skipped == [(result.applied[0][0], "already undone")]


def test_delete_and_undo_reinserts_the_exact_row(typed):
    db = typed / "facts.db"
    original = snapshot(db, "facts")
    cfg = _config(typed, '\n[[actions]]\nwhen = "expired"\ndo = "delete"\n')
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    assert set(snapshot(db, "facts")) == set(original) - EXPIRED_IDS
    undo_actions(cfg, ids=[i for i, _ in result.applied])
    assert snapshot(db, "facts") == original


def test_undo_leaves_a_row_the_bot_changed_after_our_write(typed):
    db = typed / "facts.db"
    cfg = _config(typed, SET_MANY)
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE facts SET note = 'the bot wrote this' WHERE id = 3")
    bot_row = snapshot(db, "facts")[(3,)]
    undone = undo_actions(cfg, since=result.run_at)
    skipped = dict(undone.skipped)
    id_of_3 = next(i for i, c in result.applied if c.pk == {"id": "3"})
    assert "changed after our write" in skipped[id_of_3]
    assert snapshot(db, "facts")[(3,)] == bot_row
    assert len(undone.restored) == 2


def test_one_bad_column_refuses_the_whole_plan(typed):
    cfg = _config(typed, SET_MANY + '\n[[actions]]\nwhen = "fresh"\ndo = "set"\nset = { nope = 1 }\n')
    before = file_digest(typed / "facts.db")
    with pytest.raises(ConfigError) as err:
        plan_actions(cfg, AS_OF_TS)
    assert "actions[1].set.nope" in str(err.value) and "no column 'nope'" in str(err.value)
    assert file_digest(typed / "facts.db") == before


def test_primary_key_columns_are_never_written(typed):
    cfg = _config(typed, '\n[[actions]]\nwhen = "expired"\ndo = "set"\nset = { id = 9 }\n')
    with pytest.raises(ConfigError, match=r"actions\[0\]\.set\.id: .*primary key"):
        plan_actions(cfg, AS_OF_TS)


def test_expire_needs_a_preset_that_declares_it(typed):
    cfg = _config(typed, '\n[[actions]]\nwhen = "expired"\ndo = "expire"\n')
    with pytest.raises(ConfigError, match=r"actions\[0\]\.do: .*declares no natural expiry"):
        plan_actions(cfg, AS_OF_TS)


def test_query_sources_cannot_be_written(typed):
    src = TYPED_SOURCE.replace('table = "facts"', 'query = "SELECT * FROM facts"')
    cfg = load_config(write_config(typed, src + SET_MANY))
    with pytest.raises(ConfigError, match=r"actions\[0\]: .*reads a query"):
        plan_actions(cfg, AS_OF_TS)


def test_a_second_plan_does_not_repeat_applied_or_undone_actions(typed):
    cfg = _config(typed, SET_MANY)
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    again = plan_actions(cfg, AS_OF_TS)
    assert again.writes == [] and again.already == 3
    undo_actions(cfg, since=result.run_at)
    after_undo = plan_actions(cfg, AS_OF_TS)
    assert after_undo.writes == [] and after_undo.already == 3
    with sqlite3.connect(typed / "facts.db") as conn:      # the bot rewrites one memory
        conn.execute("UPDATE facts SET fact = 'fact number 1, said again' WHERE id = 1")
    changed = plan_actions(cfg, AS_OF_TS)
    assert [c.pk for c in changed.writes] == [{"id": "1"}]


def test_an_expiry_is_never_pushed_later(typed):
    with sqlite3.connect(typed / "facts.db") as conn:
        conn.execute("UPDATE facts SET expires_at = '2002-02-02T00:00:00Z' WHERE id = 5")
    cfg = _config(typed, '\n[[actions]]\nwhen = "expired"\ndo = "set"\nset = { expires_at = "now" }\n')
    plan = plan_actions(cfg, AS_OF_TS)
    assert {c.pk["id"] for c in plan.writes} == {"1", "3"}


def test_changed_row_is_skipped_then_planned_again(typed):
    """The optimistic check: content changed after the overlay read it -> skipped, retried later."""
    cfg = _config(typed, SET_MANY)
    plan = plan_actions(cfg, AS_OF_TS)
    with sqlite3.connect(typed / "facts.db") as conn:
        conn.execute("UPDATE facts SET fact = 'rewritten by the bot' WHERE id = 3")
        conn.execute("UPDATE facts SET hits = hits + 1 WHERE id = 5")    # not content: no conflict
    bot_row = snapshot(typed / "facts.db", "facts")[(3,)]
    result = apply_plan(plan)
    assert [s.change.pk["id"] for s in result.skipped] == ["3"]
    assert "changed in the source" in result.skipped[0].reason
    assert {c.pk["id"] for _, c in result.applied} == {"1", "5"}
    assert snapshot(typed / "facts.db", "facts")[(3,)] == bot_row
    retry = plan_actions(cfg, AS_OF_TS)          # the next sync sees the new content
    assert [c.pk["id"] for c in retry.writes] == ["3"]
    assert len(apply_plan(retry).applied) == 1


def test_rowid_tables_and_text_keys(tmp_path):
    db = tmp_path / "notes.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (body TEXT, at TEXT, gone INTEGER)")
        conn.executemany("INSERT INTO notes VALUES (?, ?, 0)", [("old one", "2001-01-01"), ("new one", "2026-11-28")])
        conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT, at TEXT, gone INTEGER) WITHOUT ROWID")
        conn.executemany("INSERT INTO kv VALUES (?, ?, ?, 0)", [("42", "old", "2001-01-01"), ("x", "new", "2026-11-28")])
    cfg = load_config(write_config(tmp_path, """
[[sources]]
name = "notes"
connector = "sqlite"
path = "notes.db"
table = "notes"
text = "body"
created_at = "at"

[[sources]]
name = "kv"
connector = "sqlite"
path = "notes.db"
table = "kv"
text = "v"
created_at = "at"

[[actions]]
when = "expired"
do = "set"
set = { gone = 1 }
"""))
    original = {t: snapshot(db, t, rowid=(t == "notes")) for t in ("notes", "kv")}
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    assert sorted(c.ref for _, c in result.applied) == ["kv:kv:42", "notes:notes:1"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT rowid, gone FROM notes ORDER BY rowid").fetchall() == [(1, 1), (2, 0)]
        assert conn.execute("SELECT k, gone FROM kv ORDER BY k").fetchall() == [("42", 1), ("x", 0)]
    cfg_delete = load_config(write_config(tmp_path, cfg.path.read_text().replace(
        'do = "set"\nset = { gone = 1 }', 'do = "delete"'), "delete.toml"))
    undo_actions(cfg, since=result.run_at)
    deleted = apply_plan(plan_actions(cfg_delete, AS_OF_TS, overlay_path=str(result_overlay(cfg))))
    assert len(deleted.applied) == 2
    undo_actions(cfg, ids=[i for i, _ in deleted.applied], overlay_path=str(result_overlay(cfg)))
    assert {t: snapshot(db, t, rowid=(t == "notes")) for t in ("notes", "kv")} == original


def result_overlay(cfg):
    return cfg.resolved_overlay_path()


def test_annotations_stay_in_the_overlay_and_reach_the_audit_json(typed):
    from memwatch_overlay.overlay.engine.audit import audit
    cfg = _config(typed, """
[[actions]]
when = "expired"
do = "annotate"
set = { note = "expired at {as_of}", score = "{freshness}" }
""")
    before = file_digest(typed / "facts.db")
    plan = plan_actions(cfg, AS_OF_TS)
    assert len(plan.annotations) == 3 and not plan.writes
    result = apply_plan(plan)
    assert len(result.annotated) == 3
    assert file_digest(typed / "facts.db") == before
    res = audit(config=cfg, as_of=AS_OF_TS)
    try:
        facts = {f["pk"]["id"]: f for f in res.iter_facts()}
    finally:
        res.close()
    assert facts["2"]["annotations"] == []
    ann = facts["1"]["annotations"]
    assert len(ann) == 1 and ann[0]["when"] == "expired" and ann[0]["action"] == 0
    assert ann[0]["values"]["note"] == "expired at 2026-11-29T12:00:00+00:00"
    assert ann[0]["values"]["score"] < 0.3
    undo_actions(cfg, ids=[ann[0]["action_id"]])
    res = audit(config=cfg, as_of=AS_OF_TS)
    try:
        assert {f["pk"]["id"]: f for f in res.iter_facts()}["1"]["annotations"] == []
    finally:
        res.close()


def test_unknown_action_id_is_a_clear_error(typed):
    cfg = _config(typed, SET_MANY)
    with pytest.raises(ConfigError, match="no action 99"):
        undo_actions(cfg, ids=[99])
