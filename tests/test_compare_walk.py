"""The set comparison's walk of the facts in id order (overlay/store/compare.py
`_whole_unchanged`) goes past facts that differ: when the rows they still name, the facts
whose rows are gone and the rows appended since account for every row of the table, the
page-by-page comparison (which notes every unchanged fact in TEMP mw_seen) does not run, and
the deletion mark looks at the differing facts alone. Whatever decides, the overlay must be the
Record path's: every scenario runs with the set comparison on and off (test_sync_set_compare's
`scenario`) and both must agree.
"""
from __future__ import annotations

import pytest

from memwatch_overlay.overlay.store import compare as compare_module
from memwatch_overlay.overlay.store.compare import CompareRepo

from test_sync_set_compare import compare_every_time, scenario  # noqa: F401  (the first: autouse, snapshots off)
from test_sync_unchanged import source_sql


@pytest.fixture
def walks(monkeypatch):
    """What each walk returned (None: it could not account for every row), and how many
    statements noted unchanged facts in mw_seen (the page-by-page comparison's)."""
    seen = {"walks": [], "noted": 0}
    real_walk, real_attached = CompareRepo._whole_unchanged, CompareRepo._compare_attached

    def walk(self, *args):
        out = real_walk(self, *args)
        seen["walks"].append(out)
        return out

    def attached(self, *args):
        self.conn.set_trace_callback(lambda sql: seen.__setitem__(
            "noted", seen["noted"] + ("INTO temp.mw_seen" in sql and "SELECT f.id" in sql)))
        try:
            return real_attached(self, *args)
        finally:
            self.conn.set_trace_callback(None)

    monkeypatch.setattr(CompareRepo, "_whole_unchanged", walk)
    monkeypatch.setattr(CompareRepo, "_compare_attached", attached)
    return seen


MANY = ["UPDATE memories SET fact = 'fact number 5, edited' WHERE id = 5",
        "DELETE FROM memories WHERE id = 8",
        "UPDATE memories SET fact = '  ' WHERE id = 9",
        "UPDATE memories SET user_id = 'u99' WHERE id = 40",
        "INSERT INTO memories VALUES (61, 'u1', 'a new fact', '2026-02-01 00:00:00', 0, NULL)",
        "INSERT INTO memories VALUES (75, 'u2', 'another new fact', '2026-02-02 00:00:00', 0, NULL)"]


def test_changed_deleted_emptied_and_appended_rows_are_accounted_for_by_the_walk(tmp_path, monkeypatch, walks):
    def change(store):
        for sql in MANY:
            source_sql(store, sql)

    fast = scenario(tmp_path, "many", True, monkeypatch, change)
    walk = walks["walks"][-1]
    assert walk is not None and not walk.whole and walk.suspects is not None
    assert sorted(walk.suspects) == sorted(set(walk.suspects)) and len(walk.suspects) == 4   # 5, 8, 9, 40
    assert walk.redo == [5, 9, 40, 61, 75]         # the rows still named, then the appended ones
    assert walks["noted"] == 0                     # no page-by-page comparison
    slow = scenario(tmp_path, "many", False, monkeypatch, change)
    assert fast == slow
    assert fast["deleted"] == 2 and fast["changed"] == 4     # 8 gone, 9 emptied; 5, 40 changed, 61, 75 new


def test_rows_reusing_an_id_moved_to_a_new_key_and_appended_are_counted_as_the_record_path_counts_them(
        tmp_path, monkeypatch, walks):
    def change(store):
        source_sql(store, "DELETE FROM memories WHERE id = 30")
        source_sql(store, "INSERT INTO memories VALUES (30, 'u3', 'a row that took an old id', "
                          "'2026-02-01 00:00:00', 0, NULL)")
        source_sql(store, "DELETE FROM memories WHERE id = 31")
        source_sql(store, "INSERT INTO memories VALUES (1000, 'u3', 'appended', '2026-02-01 00:00:00', 0, NULL)")
        source_sql(store, "UPDATE memories SET id = 31000 WHERE id = 12")   # a row moved to a new key

    fast = scenario(tmp_path, "reused", True, monkeypatch, change)
    assert walks["walks"][-1] is not None and walks["noted"] == 0      # 30: a changed row of its key
    slow = scenario(tmp_path, "reused", False, monkeypatch, change)
    assert fast == slow
    assert fast["deleted"] == 2                    # 31 and the old key 12


def test_a_row_reusing_a_deleted_key_is_not_taken_for_new(tmp_path, monkeypatch, walks):
    def change(store):
        source_sql(store, "DELETE FROM memories WHERE id = 60")     # the last row: its fact is deleted ...

    def change_back(store):
        source_sql(store, "INSERT INTO memories VALUES (60, 'u4', 'back again', '2026-02-01 00:00:00', 0, NULL)")

    for fast in (True, False):
        folder_name = f"back_{fast}"
        got = scenario(tmp_path, folder_name, fast, monkeypatch, change)
        assert got["deleted"] == 1
    # ... and a later row with that key revives it, whichever way the re-audit compares
    from test_sync_set_compare import config_for, run
    results = []
    for fast in (True, False):
        folder = tmp_path / f"back_{fast}_{'fast' if fast else 'slow'}"
        store, overlay = folder / "bot.db", folder / "overlay.db"
        change_back(store)
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(CompareRepo, "can_compare_in_sql", lambda self: False)
            summary, stats = run(store, overlay, config_for(store, updated_at="updated_at"))
        results.append((summary, stats.changed, stats.deleted, stats.records))
    assert results[0] == results[1]
    assert walks["walks"][-1] is None           # its key has a (deleted) fact: not new, compared page by page


def test_more_differing_facts_than_the_walk_keeps_go_to_the_page_comparison(tmp_path, monkeypatch, walks):
    monkeypatch.setattr(compare_module, "UNMATCHED_MAX", 2)

    def change(store):
        source_sql(store, "UPDATE memories SET fact = fact || '!' WHERE id IN (3, 13, 23, 33)")

    fast = scenario(tmp_path, "cap", True, monkeypatch, change)
    assert walks["walks"][-1] is None and walks["noted"] > 0
    slow = scenario(tmp_path, "cap", False, monkeypatch, change)
    assert fast == slow and fast["changed"] == 4
