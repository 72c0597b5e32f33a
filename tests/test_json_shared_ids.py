"""JSON/JSONL records that share an id: the last one read is the fact, at every read.

A file that holds the same id twice (an append-only log of updates, or a mistake) used to give
a different fact at each re-audit: the first audit upserted the records in turn (the last one
won), and the next compared each record of a page with the fact stored before the page, so
the earlier record looked changed and was written, the later one looked unchanged and was
not. Now a page keeps the last record of each key (sync._last_of_each) and a full read of a
file warns once, naming the first line that repeats an id.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

EXE = Path(sys.executable).with_name("memwatch-overlay")
AS_OF = 1_796_000_000.0
DAY = 86400.0


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def log_with_updates(n: int) -> tuple[list[dict], dict[str, str]]:
    """n memories, then every 7th one again with a new value (later lines), and one id twice
    in a row: the records, and the text each id's fact must hold."""
    records = [{"id": f"m{i}", "user_id": "u1", "text": f"Works at Company {i}",
                "created_at": "2026-01-01T10:00:00"} for i in range(n)]
    records.insert(3, {"id": "m2", "user_id": "u1", "text": "Works at Company 2b", "created_at": "2026-01-02"})
    records += [{"id": f"m{i}", "user_id": "u1", "text": f"Works at Other {i}", "created_at": "2026-06-01"}
                for i in range(0, n, 7)]
    last = {}
    for r in records:
        last[r["id"]] = r["text"]
    return records, last


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "120"})


def test_console_audits_keep_the_last_record_and_warn_once(tmp_path):
    store = tmp_path / "memories.jsonl"
    records, last = log_with_updates(5000)      # repeats within a page and across pages (BATCH 2000)
    write_jsonl(store, records)
    overlay = tmp_path / "overlay.db"
    for attempt in range(3):
        done = run("audit", store, "--overlay", overlay, "--format", "json", "--as-of", "2026-12-01")
        assert done.returncode == 0, done.stderr
        facts = {f["ref"].rsplit(":", 1)[1]: f["text"] for f in json.loads(done.stdout)["facts"]}
        assert facts == last, attempt
        shared = [line for line in done.stderr.splitlines() if "share an id" in line]
        assert len(shared) == 1, done.stderr
        # the first line that repeats an id: m2 again on line 4
        assert f"{store}:4" in shared[0] and "'m2'" in shared[0]
        assert f"{1 + len(range(0, 5000, 7))} record(s)" in shared[0]


def config_for(path: Path):
    return parse_config({"detector": {"enabled": False},
                         "sources": [{"name": "log", "connector": "json", "path": str(path), "id": "id",
                                      "text": "text", "subject": "user_id", "created_at": "created_at"}]})


def test_a_reread_writes_nothing_and_an_append_updates(tmp_path, monkeypatch):
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)     # read the file each time
    path = tmp_path / "log.jsonl"
    records, last = log_with_updates(300)                    # one page: the repeats meet in it
    write_jsonl(path, records)
    cfg = config_for(path)
    with OverlayStore(tmp_path / "overlay.db") as store:
        engine = SyncEngine(store, cfg)
        first = engine.sync(cfg.sources[0], as_of=AS_OF, now=AS_OF)
        assert first.records == len(records)
        again = engine.sync(cfg.sources[0], as_of=AS_OF, now=AS_OF + 60, full=True)
        assert again.changed == 0 and again.deleted == 0
        assert sum("share an id" in w for w in again.warnings) == 1
        texts = dict(store.conn.execute("SELECT pk, text FROM facts WHERE status = 'active'").fetchall())
        assert {json.loads(pk)["id"]: t for pk, t in texts.items()} == last
        changed_sync = dict(store.conn.execute("SELECT pk, changed_sync FROM facts").fetchall())
        assert set(changed_sync.values()) == {1}
        # an appended line with a known id is that memory's new value (an incremental read: no warning)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": "m5", "user_id": "u1", "text": "Works at Stripe",
                                 "created_at": "2026-11-01"}) + "\n")
        appended = engine.sync(cfg.sources[0], as_of=AS_OF, now=AS_OF + 120, full=False)
        assert appended.records == 1 and appended.changed == 1
        assert not any("share an id" in w for w in appended.warnings)
        assert store.conn.execute("SELECT text FROM facts WHERE pk = ?",
                                  (json.dumps({"id": "m5"}),)).fetchone()[0] == "Works at Stripe"


def test_a_json_array_with_a_repeated_id(tmp_path, monkeypatch):
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)
    path = tmp_path / "memories.json"
    path.write_text(json.dumps([{"id": 1, "text": "Lives in Paris", "user_id": "u"},
                                {"id": 2, "text": "Likes tea", "user_id": "u"},
                                {"id": 1, "text": "Lives in Lisbon", "user_id": "u"}]), encoding="utf-8")
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "m", "connector": "json", "path": str(path), "id": "id",
                                     "text": "text", "subject": "user_id"}]})
    with OverlayStore(tmp_path / "overlay.db") as store:
        engine = SyncEngine(store, cfg)
        for i in range(3):
            stats = engine.sync(cfg.sources[0], as_of=AS_OF, now=AS_OF + i, full=True)
            assert stats.changed == (2 if i == 0 else 0)
            assert [w for w in stats.warnings if "share an id" in w] == [
                f"{path} id '1': 1 record(s) share an id with an earlier record of the file; "
                "the last one read is kept"]
            rows = store.conn.execute("SELECT text FROM facts WHERE status = 'active' ORDER BY text").fetchall()
            assert [r[0] for r in rows] == ["Likes tea", "Lives in Lisbon"]


def test_a_long_shared_id_is_shortened_in_the_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)
    path = tmp_path / "big.jsonl"
    big = "x" * 100_000 + "\nend"
    write_jsonl(path, [{"id": big, "text": "Lives in Paris"}, {"id": big, "text": "Lives in Rome"}])
    cfg = config_for(path)
    with OverlayStore(tmp_path / "overlay.db") as store:
        stats = SyncEngine(store, cfg).sync(cfg.sources[0], as_of=AS_OF, now=AS_OF)
    (warning,) = [w for w in stats.warnings if "share an id" in w]
    assert len(warning) < len(str(path)) + 200 and "\n" not in warning and "xxx...xxx" in warning
