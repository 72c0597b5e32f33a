"""A re-audit compares a plain source row as a tuple, without a Record (Connector.read_for_compare,
tabular.tuple_plain, sync._plain_unchanged), and keeps the unchanged facts' ids until the read
needs the deletion mark (sync._SeenUnchanged).

The plain comparison must never call a row unchanged that the Record path (_unchanged_test)
would call changed: an overlay re-audited through it must be the overlay the Record path
leaves, for rows of every awkward kind (time forms, NULLs, non-ASCII, counts that are not
integers, categories set and cleared, deleted and forgotten facts). On a Postgres overlay
(no set comparison there) and on a SQLite one with the set comparison off.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.connectors.base import Connector
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.tabular import PLAIN_FIELDS
from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.store.compare import CompareRepo
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

AS_OF = 1_796_000_000.0          # 2026-11-29
T0 = "2026-01-01 00:00:00"
TIMES = [None, T0, "2026-01-01T08:30:00", "2026-01-01", "2026-01-01 00:00:00.250000", "2026-01-01T00:00:00+02:00",
         "2026-01-01T00:00:00Z", 1767225600, 1767225600.5, "not a time", "", "2026/01/01 00:00:00", " 2026-01-01",
         "0001-01-01 00:00:00", "9999-12-31 23:59:59", "2026-13-01 00:00:00"]
SUBJECTS = [None, "", "u1", "\u00dcn\u00efc\u00f8d\u00e9", 'user "q"', 7]
KEYS = [None, "", "employer", "\u0433\u043e\u0440\u043e\u0434", b"blob"]
TEXTS = ["Works at Acme", "Caf\u00e9 \u2615 \u6771\u4eac na\u00efve", "  padded  ", "line\nbreak", "it's \"quoted\"",
         "   ", 42, b"bytes text"]
CATEGORIES = [None, "", "skill", "Employment", 3]
COUNTS = [None, 0, 3, "5", 2.5, -1]
# columns of `facts` that depend on the clock of the run (not on the comparison)
CLOCK_COLUMNS = {"first_seen", "last_seen"}


def make_store(path: Path) -> None:
    """Two tables: an integer key (rows 1-20 plain, the rest cycling through awkward values)
    and a text key with quotes, backslashes and non-ASCII."""
    conn = sqlite3.connect(path)
    for table, key_type in (("memories", "INTEGER"), ("notes", "TEXT")):
        conn.execute(f"CREATE TABLE {table} (id {key_type} PRIMARY KEY, user_id, fact, mkey, kind, hits, "
                     "created_at, updated_at, seen_at, expires)")
    rows = []
    for i in range(1, 21):
        rows.append((i, "u1", f"fact number {i}", "employer", None, None, T0, None, None, None))
    for i in range(21, 121):
        rows.append((i, SUBJECTS[i % 6], TEXTS[i % 8], KEYS[i % 5], CATEGORIES[i % 5], COUNTS[i % 6],
                     TIMES[i % 16], TIMES[(i * 3) % 16], TIMES[(i * 5) % 16], TIMES[(i * 7) % 16]))
    plain_times = [None, T0, "2026-01-01T08:30:00", "2026-01-01", "2026-01-01 00:00:00.250000",
                   "0001-01-01 00:00:00", "9999-12-31 23:59:59"]
    for i in range(200, 300):      # plain rows of every plain kind
        rows.append((i, [None, "", "u1", "\u00fc"][i % 4], f"plain {i} \u00e9t\u00e9", [None, "", "city"][i % 3],
                     [None, ""][i % 2], [None, 0, 7][i % 3], plain_times[i % 7], plain_times[(i // 7) % 7],
                     plain_times[(i * 3) % 7], plain_times[(i * 5) % 7]))
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    ids = ["plain", 'a"b', "back\\slash", "\u043a\u043b\u044e\u0447", "caf\u00e9", "tab\there", "7"]
    conn.executemany("INSERT INTO notes VALUES (?, 'u2', ?, 'city', NULL, 1, ?, NULL, NULL, NULL)",
                     [(k, f"note {n}", TIMES[n % 16]) for n, k in enumerate(ids)])
    conn.commit()
    conn.close()


def mutate(path: Path) -> None:
    """Every kind of change a re-audit must see, and some that are not changes."""
    conn = sqlite3.connect(path)
    for sql in ("UPDATE memories SET fact = 'fact number one, changed' WHERE id = 1",
                "UPDATE memories SET mkey = 'city' WHERE id = 2",
                "UPDATE memories SET user_id = 'u9' WHERE id = 3",
                "UPDATE memories SET kind = 'skill' WHERE id = 4",
                "UPDATE memories SET kind = 'skill' WHERE id = 5",
                "UPDATE memories SET created_at = '2026-02-01 00:00:00' WHERE id = 7",
                "UPDATE memories SET created_at = '2026-01-01T00:00:00' WHERE id = 8",   # the same instant
                "UPDATE memories SET hits = 4 WHERE id = 9",
                "UPDATE memories SET seen_at = '2026-03-01 00:00:00' WHERE id = 10",
                "UPDATE memories SET expires = '2027-01-01' WHERE id = 11",
                "DELETE FROM memories WHERE id IN (12, 13, 57)",
                "UPDATE memories SET fact = '   ' WHERE id = 14",
                "UPDATE memories SET updated_at = '2026-01-01 00:00:01' WHERE id = 17",
                "UPDATE memories SET hits = 0 WHERE id = 18",                           # NULL -> 0: the same count
                "UPDATE memories SET mkey = '' WHERE id = 19",                          # '' and NULL: both none
                "UPDATE memories SET kind = NULL WHERE kind = 'skill' AND id > 20",     # a category cleared
                "UPDATE memories SET kind = '' WHERE kind = 'Employment' AND id > 20",
                "UPDATE memories SET hits = hits + 1 WHERE id BETWEEN 60 AND 80 AND typeof(hits) = 'integer'",
                "UPDATE memories SET fact = fact || ' (edited)' WHERE id BETWEEN 90 AND 95",
                "INSERT INTO memories (id, user_id, fact, created_at) VALUES (500, 'u1', 'a new fact', '2026-05-05')",
                "UPDATE memories SET created_at = '2026-01-01 00:00:00.500000' WHERE id = 201",
                "UPDATE memories SET updated_at = NULL WHERE id = 202",
                "UPDATE memories SET seen_at = '2026-01-01' WHERE id BETWEEN 203 AND 206",
                "UPDATE memories SET expires = NULL WHERE id BETWEEN 207 AND 210",
                "UPDATE memories SET user_id = NULL WHERE id = 211",                    # '' -> NULL: both none
                "UPDATE memories SET user_id = 'U1' WHERE id = 214",
                "UPDATE memories SET mkey = 'City' WHERE id = 215",
                "UPDATE memories SET hits = 8 WHERE id = 216",
                "UPDATE memories SET kind = 'skill' WHERE id = 217",
                "UPDATE memories SET fact = fact || ' ' WHERE id = 218",
                "UPDATE memories SET created_at = '2026-01-01T00:00:00' WHERE id = 219",
                "DELETE FROM memories WHERE id = 220",
                "UPDATE notes SET fact = 'note changed' WHERE id = 'a\"b'",
                "DELETE FROM notes WHERE id = 'caf\u00e9'"):
        conn.execute(sql)
    conn.commit()
    conn.close()


def config_for(store: Path):
    mapping = {"id": "id", "text": "fact", "subject": "user_id", "key": "mkey", "category": "kind",
               "access_count": "hits", "created_at": "created_at", "updated_at": "updated_at",
               "accessed_at": "seen_at", "expires_at": "expires"}
    return parse_config({"detector": {"enabled": False}, "sources": [
        {"name": "bot", "connector": "sqlite", "path": str(store), "table": "memories", **mapping},
        {"name": "notes", "connector": "sqlite", "path": str(store), "table": "notes", **mapping}]})


def run_audit(store: Path, overlay: str, cfg) -> list:
    result = audit(None, cfg, as_of=AS_OF, overlay_path=overlay)
    try:
        return [(s.source, s.records, s.changed, s.deleted, s.rows_read, s.warnings) for s in result.stats], \
            [s.plain_unchanged for s in result.stats]
    finally:
        result.close()


def facts_of(overlay: str) -> list[dict]:
    with OverlayStore(overlay) as ov:
        rows = [dict(r) for r in ov.conn.execute("SELECT * FROM facts ORDER BY source_id, pk")]
    return [{k: v for k, v in r.items() if k not in CLOCK_COLUMNS} for r in rows]


def forget(overlay: str, refs: list[str]) -> None:
    with OverlayStore(overlay) as ov, ov.transaction():
        for ref in refs:
            ov.conn.execute("UPDATE facts SET status = 'forgotten' WHERE ref = ?", (ref,))


def record_path(monkeypatch) -> None:
    """The re-audit from now on reads Records only (the comparison as it was before the tuples)."""
    monkeypatch.setattr(SqliteConnector, "read_for_compare", Connector.read_for_compare)


@pytest.fixture(autouse=True)
def compare_every_time(monkeypatch):
    """These tests are about the comparison of plain rows: a recorded source snapshot would
    answer an unchanged re-audit without reading them (tests/test_source_snapshot.py)."""
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)


@pytest.fixture(params=["postgres", "sqlite"])
def overlays(request, tmp_path, monkeypatch):
    """make() -> a new overlay of the backend (a throwaway Postgres database, or a SQLite file
    with the set comparison off: the Record comparison is the one compared)."""
    if request.param == "postgres":
        make_db = request.getfixturevalue("pg_database")
        return lambda: make_db("mw_plain")
    monkeypatch.setattr(CompareRepo, "can_compare_in_sql", lambda self: False)
    names = iter(range(100))
    return lambda: str(tmp_path / f"overlay{next(names)}.db")


def test_plain_rows_are_the_records_values(tmp_path):
    store = tmp_path / "bot.db"
    make_store(store)
    for source in config_for(store).sources:
        with make_connector(source) as conn:
            records = list(conn.read())
        with make_connector(source) as conn:
            mixed = list(conn.read_for_compare())
        assert len(mixed) == len(records)
        plain = 0
        for item, rec in zip(mixed, records):
            if item.__class__ is not tuple:
                assert item == rec
                continue
            plain += 1
            values = dict(zip(PLAIN_FIELDS, item))
            assert values["record"](values["row"]) == rec
            assert rec.pk == {values["pk_name"]: values["pk_value"]}
            assert rec.category is None and rec.status == "active" and rec.replaced_by is None
            for name in ("table", "text", "subject", "key", "created_at", "updated_at", "accessed_at",
                         "access_count", "expires_at"):
                assert values[name] == getattr(rec, name) and type(values[name]) is type(getattr(rec, name)), name
        assert 0 < plain < len(records) or source.name == "notes"


def test_a_reaudit_through_plain_rows_leaves_the_record_paths_overlay(tmp_path, overlays, monkeypatch):
    store = tmp_path / "bot.db"
    make_store(store)
    cfg = config_for(store)
    plain_ov, record_ov = overlays(), overlays()
    for ov in (plain_ov, record_ov):
        run_audit(store, ov, cfg)
        forget(ov, ["bot:memories:15", "bot:memories:16", "bot:memories:95"])
    assert facts_of(plain_ov) == facts_of(record_ov)
    mutate(store)
    stats, plain_counts = run_audit(store, plain_ov, cfg)
    with monkeypatch.context() as m:
        record_path(m)
        record_stats, record_counts = run_audit(store, record_ov, cfg)
    assert stats == record_stats
    assert plain_counts[0] > 80 and record_counts == [0, 0]      # the tuples were compared, then not
    got = facts_of(plain_ov)
    assert got == facts_of(record_ov)
    status = {f["ref"]: f["status"] for f in got}
    assert status["bot:memories:12"] == status["bot:memories:57"] == status["notes:notes:caf\u00e9"] == "deleted"
    assert status["bot:memories:14"] == "deleted" and status["bot:memories:15"] == "forgotten"
    # and once more, nothing changed: every plain row is found unchanged without a Record
    again, counts = run_audit(store, plain_ov, cfg)
    assert [s[2:4] for s in again] == [(0, 0), (0, 0)]
    assert counts[1] == 4 and counts[0] > 100        # (two notes have a time with a zone: Records)
    assert facts_of(plain_ov) == got


def _calls(monkeypatch, method: str) -> list:
    """Arguments OverlayStore.<method> is called with from now on (it still runs)."""
    seen: list = []
    real = getattr(OverlayStore, method)

    def spy(self, *args, **kwargs):
        seen.append(args)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(OverlayStore, method, spy)
    return seen


def test_an_unchanged_reaudit_notes_no_id_and_marks_nothing(tmp_path, overlays, monkeypatch):
    store = tmp_path / "bot.db"
    make_store(store)
    cfg = config_for(store)
    ov = overlays()
    run_audit(store, ov, cfg)
    before = facts_of(ov)
    noted, marked = _calls(monkeypatch, "note_unchanged"), _calls(monkeypatch, "mark_unseen_deleted")
    run_audit(store, ov, cfg)
    assert noted == [] and marked == []
    assert facts_of(ov) == before
    # a row deleted from the source: the kept ids are noted after all, and only that fact is marked
    conn = sqlite3.connect(store)
    conn.execute("DELETE FROM memories WHERE id = 3")
    conn.commit()
    conn.close()
    stats, _ = run_audit(store, ov, cfg)
    assert stats[0][3] == 1 and len(marked) == 1 and sum(len(args[0]) for args in noted) > 190
    after = {f["ref"]: f for f in facts_of(ov)}
    assert after["bot:memories:3"]["status"] == "deleted"
    assert all(after[f["ref"]] == f for f in before if f["ref"] != "bot:memories:3")
