"""The daemon in-process: file events wake it, failures back off, labels decay, hooks fire.

Real SQLite files and real watchdog observers; waits are "until it happens, or fail
after a generous limit", never assertions on how long something took.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from memwatch_overlay.overlay.daemon.loop import Daemon, SyncEvent
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.engine.scoring import DAY
from memwatch_overlay.rules.config import parse_config

T0 = "2026-01-01 00:00:00"


def make_db(path: Path, n: int = 10, wal: bool = True) -> None:
    with sqlite3.connect(path) as conn:
        if wal:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, fact TEXT, created_at TEXT, updated_at TEXT)")
        conn.executemany("INSERT INTO facts VALUES (?, ?, ?, ?)", ((i, f"fact {i}", T0, T0) for i in range(1, n + 1)))
    conn.close()


def source(name: str, path: Path, **extra) -> dict:
    return {"name": name, "connector": "sqlite", "path": str(path), "table": "facts", "id": "id", "text": "fact",
            "created_at": "created_at", "updated_at": "updated_at", **extra}


def config(tmp_path: Path, *sources: dict, **daemon) -> object:
    settings = {"debounce_seconds": 0.05, "max_delay_seconds": 0.5, "rescore_seconds": 3600,
                "deletion_scan_seconds": 3600, "heartbeat_seconds": 3600, **daemon}
    return parse_config({"overlay": {"path": str(tmp_path / "overlay.db")}, "daemon": settings,
                         "sources": list(sources)})


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)

    def events(self, event: str, source: str | None = None) -> list[logging.LogRecord]:
        return [r for r in self.records if getattr(r, "event", None) == event
                and (source is None or getattr(r, "source", None) == source)]


@pytest.fixture
def log():
    logger = logging.getLogger(f"test-daemon-{time.monotonic_ns()}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    handler = Records()
    logger.addHandler(handler)
    logger.records = handler
    return logger


def overlay_count(tmp_path: Path, where: str = "1") -> int:
    """Facts in the overlay (-1 before the daemon created it); read-only, creates nothing."""
    path = tmp_path / "overlay.db"
    if not path.exists():
        return -1
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT count(*) FROM facts WHERE {where}").fetchone()[0]
    except sqlite3.OperationalError:
        return -1
    finally:
        conn.close()


def wait_for(predicate, limit: float = 20.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def running(daemon: Daemon) -> threading.Thread:
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("poll", [False, True], ids=["file-events", "polling-observer"])
def test_a_write_wakes_the_daemon_without_waiting_for_the_poll(tmp_path, log, poll):
    db = tmp_path / "bot.db"
    make_db(db)
    cfg = config(tmp_path, source("bot", db, poll_seconds=3600))   # the safety poll never comes in time
    d = Daemon(cfg, poll=poll, log=log)
    thread = running(d)
    try:
        assert wait_for(lambda: overlay_count(tmp_path) == 10)
        with sqlite3.connect(db) as w:
            w.execute("INSERT INTO facts VALUES (11, 'moved to Berlin', ?, ?)", ("2026-02-01 00:00:00",) * 2)
        assert wait_for(lambda: overlay_count(tmp_path) == 11), "the -wal event did not wake the daemon"
        assert wait_for(lambda: log.records.events("sync", "bot")), "logged after the commit"
        last = log.records.events("sync", "bot")[-1]
        assert last.rows_read == 1 and last.changed == 1
    finally:
        d.stop()
        thread.join(10)
    assert not thread.is_alive()


def test_a_deferred_update_scan_runs_without_another_change(tmp_path, log):
    db = tmp_path / "bot.db"
    make_db(db)
    cfg = config(tmp_path, source("bot", db, poll_seconds=3600), update_scan_seconds=3)
    d = Daemon(cfg, log=log)
    thread = running(d)
    try:
        assert wait_for(lambda: overlay_count(tmp_path) == 10)
        with sqlite3.connect(db) as w:
            w.execute("UPDATE facts SET fact = 'edited', updated_at = '2026-03-01 00:00:00' WHERE id = 4")
        # The event's tick reads nothing (the update scan is not due yet) ...
        assert wait_for(lambda: log.records.events("sync", "bot"))
        assert log.records.events("sync", "bot")[0].rows_read == 0
        # ... and the scan comes when due, with no further write to wake it.
        assert wait_for(lambda: overlay_count(tmp_path, "text = 'edited'") == 1)
    finally:
        d.stop()
        thread.join(10)


def test_labels_decay_while_nothing_changes(tmp_path, log):
    db = tmp_path / "bot.db"
    make_db(db, 20)
    now = [time.time()]
    cfg = config(tmp_path, source("bot", db), rescore_seconds=0.001)
    with Daemon(cfg, log=log, clock=lambda: now[0]) as d:
        d.tick(force=True)
        before = dict(d.store.conn.execute("SELECT id, label FROM facts").fetchall())
        reads = d.states[0].connector.rows_read
        now[0] += 3 * 365 * DAY
        time.sleep(0.01)
        d.tick()
        after = dict(d.store.conn.execute("SELECT id, label FROM facts").fetchall())
        assert d.states[0].connector.rows_read == reads, "rescoring reads nothing from the source"
    assert set(after) == set(before) and all(after[k] != before[k] for k in before)
    assert set(after.values()) == {"expired"}
    assert log.records.events("rescore")[-1].rescored == 20


def test_failing_source_backs_off_and_recovers_while_another_syncs(tmp_path, log):
    good, bad = tmp_path / "good.db", tmp_path / "later" / "bad.db"
    make_db(good)
    cfg = config(tmp_path, source("good", good), source("bad", bad),
                 backoff_initial_seconds=0.01, backoff_max_seconds=0.04, error_log_seconds=3600)
    with Daemon(cfg, log=log) as d:
        delays = []
        failed = d._failed

        def failed_and_seen(state, exc):
            # the backoff chosen, read the moment it is set (not after the rest of the tick,
            # which a loaded machine can stretch past the delay itself)
            failed(state, exc)
            delays.append(round(state.retry_at - time.monotonic(), 2))

        d._failed = failed_and_seen
        for i in range(5):
            with sqlite3.connect(good) as w:
                w.execute("INSERT INTO facts VALUES (?, 'more', ?, ?)", (100 + i, T0, T0))
            time.sleep(0.05)
            d.tick(force=True)
        assert overlay_count(tmp_path, "tbl = 'facts' AND source_id = (SELECT id FROM sources WHERE name='good')") == 15
        errors = log.records.events("error", "bad")
        assert len(errors) == 1, "one report, then quiet until error_log_seconds"
        assert "no such file" in errors[0].error and errors[0].attempt == 1
        assert d.states[1].failures == 5
        assert delays == [0.01, 0.02, 0.04, 0.04, 0.04]     # doubling from backoff_initial, capped at max
        row = d.store.source_row("bad")
        assert row["errors"] == 5 and row["consecutive_errors"] == 5 and "no such file" in row["last_error"]
        bad.parent.mkdir()
        make_db(bad, 3)
        time.sleep(0.05)
        d.tick(force=True)
        assert d.states[1].failures == 0
        recovered = log.records.events("recovered", "bad")
        assert len(recovered) == 1 and recovered[0].errors == 5
        assert "recovered after 5 error(s)" in recovered[0].getMessage()
        assert d.store.source_row("bad")["consecutive_errors"] == 0


def test_a_corrupt_source_is_reported_not_fatal(tmp_path, log):
    good, bad = tmp_path / "good.db", tmp_path / "bad.db"
    make_db(good)
    bad.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    cfg = config(tmp_path, source("bad", bad), source("good", good))
    with Daemon(cfg, log=log) as d:
        d.tick(force=True)
        assert d.store.source_row("good")["rows_seen"] == 10
        assert d.store.source_row("bad")["errors"] == 1
    err = log.records.events("error", "bad")[0]
    assert "bad.db" in err.error and err.exc_info is None


def test_after_sync_hooks_see_every_committed_change_and_may_fail(tmp_path, log):
    db = tmp_path / "bot.db"
    make_db(db)
    seen: list[SyncEvent] = []
    cfg = config(tmp_path, source("bot", db), rescore_seconds=0.001)
    now = [time.time()]
    with Daemon(cfg, log=log, clock=lambda: now[0]) as d:
        d.after_sync.append(lambda ev: seen.append(ev))
        d.after_sync.append(lambda ev: 1 / 0)
        d.tick(force=True)
        with sqlite3.connect(db) as w:
            w.execute("DELETE FROM facts WHERE id = 2")
        now[0] += 900 * DAY
        time.sleep(0.01)
        d.tick(force=True)
    kinds = [e.kind for e in seen]
    assert kinds[0] == "full" and "sync" in kinds and "deletions" in kinds and "rescore" in kinds
    deletions = [e for e in seen if e.kind == "deletions"][-1]
    assert deletions.stats.deleted == 1 and deletions.source.name == "bot"
    assert len(log.records.events("hook_error")) == len(seen)


def test_changed_mapping_triggers_a_full_sync_on_restart(tmp_path, log):
    db = tmp_path / "bot.db"
    make_db(db)
    with Daemon(config(tmp_path, source("bot", db)), log=log) as d:
        d.tick(force=True)
    with Daemon(config(tmp_path, source("bot", db)), log=log) as d:
        assert not d.states[0].needs_full, "same config: resume from the cursor"
    changed = config(tmp_path, source("bot", db, where="id > 5"))
    with Daemon(changed, log=log) as d:
        assert d.states[0].needs_full
        d.tick(force=True)
        assert d.store.source_row("bot")["rows_seen"] == 5
    assert log.records.events("config_changed", "bot")


def test_replaced_file_is_reopened(tmp_path, log):
    db = tmp_path / "bot.db"
    make_db(db, 5)
    with Daemon(config(tmp_path, source("bot", db)), log=log) as d:
        d.tick(force=True)
        tmp = tmp_path / "new.db"
        make_db(tmp, 8)
        os.replace(tmp, db)
        for suffix in ("-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        d.tick(force=True)
        assert d.store.source_row("bot")["rows_seen"] == 8


def test_lifecycle_is_idempotent(tmp_path, log):
    db = tmp_path / "bot.db"
    make_db(db)
    d = Daemon(config(tmp_path, source("bot", db)), log=log)
    d.stop()
    d.stop()                      # before start: harmless
    d2 = Daemon(config(tmp_path, source("bot", db)), log=log)
    d2.start()
    d2.start()
    d2.stop()
    d2.stop()
    assert len(log.records.events("stop")) == 1
    with pytest.raises(ConfigError, match="no \\[\\[sources\\]\\]"):
        Daemon(parse_config({}), log=log)


def test_status_reports_a_live_daemon_and_small_lag(tmp_path, log):
    from memwatch_overlay.overlay.engine.maintenance import source_status
    db = tmp_path / "bot.db"
    make_db(db)
    cfg = config(tmp_path, source("bot", db, poll_seconds=0.05), heartbeat_seconds=0.1)
    d = Daemon(cfg, log=log)
    thread = running(d)
    try:
        assert wait_for(lambda: overlay_count(tmp_path) == 10)
        time.sleep(0.5)
        status = source_status(None, str(tmp_path / "overlay.db"))
        assert status["daemon"]["running"] is True and status["daemon"]["pid"] == os.getpid()
        (bot,) = status["sources"]
        assert bot["lag_seconds"] < 5 and bot["rows_seen"] == 10 and bot["errors"] == 0
    finally:
        d.stop()
        thread.join(10)
    assert source_status(None, str(tmp_path / "overlay.db"))["daemon"]["running"] is False


def test_a_row_warning_is_logged_once_not_on_every_sync(tmp_path, log):
    db = tmp_path / "bot.db"
    make_db(db)
    with sqlite3.connect(db) as w:
        w.execute("INSERT INTO facts VALUES (99, 'odd row', 'sometime last spring', ?)", (T0,))
    with Daemon(config(tmp_path, source("bot", db)), log=log) as d:
        d.tick(force=True)
        for i in range(3):
            with sqlite3.connect(db) as w:
                w.execute("INSERT INTO facts VALUES (?, 'fine', ?, ?)", (200 + i, T0, T0))
            d.tick(force=True)
    warnings = [r.getMessage() for r in log.records.records if r.levelno == logging.WARNING]
    assert len([m for m in warnings if "sometime last spring" in m]) == 1, warnings


def test_schema_changes_are_seen_by_a_connection_kept_open(tmp_path, log):
    db = tmp_path / "bot.db"
    make_db(db)
    with Daemon(config(tmp_path, source("bot", db)), log=log) as d:
        d.tick(force=True)
        connector = d.states[0].connector
        assert "topic" not in connector.table_info("facts").columns
        with sqlite3.connect(db) as w:
            w.execute("ALTER TABLE facts ADD COLUMN topic TEXT")
        assert connector.has_changes()
        assert "topic" in connector.table_info("facts").columns


def test_a_jsonl_source_is_watched_too(tmp_path, log):
    """The MCP memory server's JSONL file: an appended entity wakes the daemon and is synced."""
    import shutil
    fixture = Path(__file__).parent / "fixtures" / "agent-stores" / "mcp-memory" / "memory.jsonl"
    path = tmp_path / "memory.jsonl"
    shutil.copy(fixture, path)
    cfg = config(tmp_path, {"name": "mcp", "connector": "json", "path": str(path), "preset": "mcp-memory",
                            "poll_seconds": 3600})
    d = Daemon(cfg, log=log)
    thread = running(d)
    try:
        assert wait_for(lambda: overlay_count(tmp_path) > 0)
        before = overlay_count(tmp_path)
        with open(path, "a") as fh:
            fh.write('{"type":"entity","name":"Zed","entityType":"person","observations":["Zed lives in Oslo."]}\n')
        assert wait_for(lambda: overlay_count(tmp_path) == before + 1), "the file event did not wake the daemon"
        assert overlay_count(tmp_path, "text = 'Zed lives in Oslo.'") == 1
    finally:
        d.stop()
        thread.join(10)
    assert not log.records.events("error")
