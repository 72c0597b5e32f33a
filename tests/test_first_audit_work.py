"""What a first audit with detection off does not do: read the changed facts' ids (nothing
is judged again in an overlay without contradictions) or import the detection modules; and
how an audit's connection is set for its load, its walk and its log."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import parse_config

AS_OF = parse_as_of("2026-11-29")


def make_store(path: Path, n: int = 300) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?)",
                     ((i, f"u{i % 11}", f"works at Acme {i}", f"2026-0{1 + i % 9}-01 00:00:00")
                      for i in range(1, n + 1)))
    conn.commit()
    conn.close()


def config_for(path: Path, detect: bool):
    return parse_config({"detector": {"enabled": detect},
                         "sources": [{"name": "bot", "connector": "sqlite", "path": str(path), "table": "memories",
                                      "id": "id", "text": "fact", "subject": "user_id",
                                      "created_at": "created_at"}]})


def test_a_first_audit_reads_no_changed_ids_and_a_re_audit_after_a_change_does(tmp_path, monkeypatch):
    store = tmp_path / "bot.db"
    make_store(store)
    calls = []
    real = OverlayStore.changed_ids
    monkeypatch.setattr(OverlayStore, "changed_ids", lambda self, *a: calls.append(a) or real(self, *a))
    cfg = config_for(store, detect=False)
    result = audit(None, cfg, as_of=AS_OF, overlay_path=str(tmp_path / "o.db"))
    assert result.summary["total"] == 300
    result.close()
    assert calls == []
    # with a detector the contradictions it finds are stored and the status applied as before
    result = audit(None, config_for(store, detect=True), as_of=AS_OF, overlay_path=str(tmp_path / "o2.db"))
    try:
        assert result.summary["total"] == 300
        assert result.summary["contradicted"] > 0
        assert result.store.conn.execute("SELECT count(*) FROM contradictions").fetchone()[0] > 0
    finally:
        result.close()


def test_detection_off_imports_no_detection_module(tmp_path):
    store = tmp_path / "bot.db"
    make_store(store)
    code = (
        "import sys\n"
        "from memwatch_overlay.overlay.engine.audit import audit\n"
        "from memwatch_overlay.rules.config import parse_config\n"
        f"cfg = parse_config({{'detector': {{'enabled': False}}, 'sources': [{{'name': 'bot', 'connector': 'sqlite', "
        f"'path': {str(store)!r}, 'table': 'memories', 'id': 'id', 'text': 'fact', 'subject': 'user_id', "
        f"'created_at': 'created_at'}}]}})\n"
        f"r = audit(None, cfg, as_of=1.8e9, overlay_path={str(tmp_path / 'o.db')!r})\n"
        "assert r.summary['total'] == 300\n"
        "r.close()\n"
        "print(sorted(m for m in sys.modules if '.overlay.detect' in m))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_paged_read_generates_each_page_statement_once(tmp_path, monkeypatch):
    """A full read pages by rowid with one statement per page: its SQL text is made once
    (sqlglot generation, ~2 ms a page) and only the rowid bound changes."""
    from sqlglot import exp

    from memwatch_overlay.connectors import sqlite as sqlite_connector
    from memwatch_overlay.connectors.registry import make_connector

    store = tmp_path / "bot.db"
    make_store(store, n=1050)
    monkeypatch.setattr(sqlite_connector, "PAGE_ROWS", 100)
    made = []
    real = exp.Select.sql
    monkeypatch.setattr(exp.Select, "sql", lambda self, *a, **k: made.append(s := real(self, *a, **k)) or s)
    connector = make_connector(config_for(store, detect=False).sources[0])
    with connector:
        texts = [r.text for r in connector.read(None)]
    assert texts == [f"works at Acme {i}" for i in range(1, 1051)]
    paged = [s for s in made if "LIMIT 100" in s]
    assert len(paged) == 2 and connector.rows_read == 1050   # the first page's and the rest's


def test_an_audits_log_is_copied_into_the_file_in_the_background(tmp_path, monkeypatch):
    """The sync's commit copies nothing into the overlay file (no autocheckpoint); a thread
    of its own does, while the audit goes on to its summary, and close() waits for it: then
    the file alone (the log ignored) holds every fact, and no log is left."""
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    store = tmp_path / "bot.db"
    make_store(store, 2000)
    overlay = tmp_path / "overlay.db"
    during = []
    real = SyncEngine.sync
    monkeypatch.setattr(SyncEngine, "sync", lambda self, *a, **k: during.append(
        self.store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) or real(self, *a, **k))

    def in_the_file() -> int:
        conn = sqlite3.connect(f"file:{overlay}?mode=ro&immutable=1", uri=True)     # the log not read
        try:
            return conn.execute("SELECT count(*) FROM facts").fetchone()[0]
        finally:
            conn.close()
    result = audit(config=config_for(store, False), as_of=AS_OF, overlay_path=str(overlay))
    try:
        assert during == [0]
        assert result.store._checkpointer is not None
        result.store._checkpointer.join()
        assert in_the_file() == result.summary["total"] == 2000
    finally:
        result.close()
    assert not Path(f"{overlay}-wal").exists() and in_the_file() == 2000


def test_a_walk_of_many_changed_facts_runs_with_a_wider_page_cache_and_gives_it_back(tmp_path, monkeypatch):
    """The walk's subject scan (SCAN_MIN_CHANGED changed facts or more) runs with
    WALK_PAGE_CACHE_KB of page cache; the load before it, and the connection after it, keep
    SQLite's default (a wider cache made a large load slower and larger)."""
    from memwatch_overlay.overlay.detect import blocks
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    from memwatch_overlay.overlay.store.database import WALK_PAGE_CACHE_KB
    store = tmp_path / "bot.db"
    make_store(store, blocks.SCAN_MIN_CHANGED + 100)
    overlay = tmp_path / "overlay.db"
    loading, walking = [], []
    real_sync, real_scan = SyncEngine.sync, blocks._scanned_blocks
    monkeypatch.setattr(SyncEngine, "sync", lambda self, *a, **k: loading.append(
        self.store.conn.execute("PRAGMA cache_size").fetchone()[0]) or real_sync(self, *a, **k))
    for name in ("insert_staged", "upsert_facts"):        # a staged load's pages, or the Record path's
        def probe(self, *a, _real=getattr(OverlayStore, name)):
            loading.append(self.conn.execute("PRAGMA cache_size").fetchone()[0])
            return _real(self, *a)
        monkeypatch.setattr(OverlayStore, name, probe)

    def scanned(store, *a):
        walking.append(store.conn.execute("PRAGMA cache_size").fetchone()[0])
        return real_scan(store, *a)
    monkeypatch.setattr(blocks, "_scanned_blocks", scanned)
    result = audit(config=config_for(store, True), as_of=AS_OF, overlay_path=str(overlay))
    try:
        assert len(loading) >= 2 and set(loading) == {-2000} and walking == [-WALK_PAGE_CACHE_KB]
        assert result.store.conn.execute("PRAGMA cache_size").fetchone()[0] == -2000
        assert result.summary["total"] == blocks.SCAN_MIN_CHANGED + 100
    finally:
        result.close()
