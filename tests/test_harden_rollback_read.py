"""Issue 16 point 13: the daemon's reads of a rollback-journal store yield to the bot
(a one-shot audit does not pause: nothing says a bot is writing beside it).

A full read (and the key-only deletion pass) pages by rowid; between two pages no read
lock is held, and in rollback-journal mode the reader pauses there (the connector's
`sleep`, replaced here by a step that plays the bot: BEGIN IMMEDIATE, INSERT, COMMIT with
no busy wait). Deterministic: the bot's commit either gets the EXCLUSIVE lock at that
moment or fails at once with "database is locked"; no clock is read.
"""
from __future__ import annotations

import sqlite3

import pytest

from memwatch_overlay.connectors import sqlite as sqlite_mod
from memwatch_overlay.connectors.registry import make_connector

from test_connector_sqlite import make_store, source

N = 3 * sqlite_mod.ROLLBACK_PAGE_ROWS + 7    # four pages in rollback mode


def rows(n):
    return [(i, f"u{i % 5}", "city", f"Lives in city {i}", "2025-01-01 10:00:00", "2025-01-01 10:00:00")
            for i in range(1, n + 1)]


class Bot:
    """The bot's connection: commits without waiting for a lock (timeout 0)."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path, timeout=0, isolation_level=None)
        self.next_id = 10 ** 6
        self.commits = 0
        self.locked = 0

    def write(self, _pause=None):
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute("INSERT INTO facts VALUES (?, 'bot', 'pet', 'a cat', "
                              "'2025-06-01 10:00:00', '2025-06-01 10:00:00')", (self.next_id,))
            self.next_id += 1
            self.conn.execute("COMMIT")
            self.commits += 1
        except sqlite3.OperationalError as exc:
            assert "locked" in str(exc)
            self.locked += 1
            self.conn.execute("ROLLBACK")


@pytest.mark.parametrize("pass_", ["read", "keys"])
def test_a_paced_read_of_a_rollback_journal_store_lets_the_bot_commit_between_pages(tmp_path, pass_):
    db = make_store(tmp_path / "bot.db", wal=False, rows=rows(N))
    bot = Bot(db)
    with make_connector(source(db)) as conn:
        assert conn.rollback_journal()
        conn.yield_to_writer = True          # as the daemon sets it
        conn.sleep = bot.write               # the pause between pages: the bot commits there
        got = list(conn.read()) if pass_ == "read" else list(conn.keys())
    assert conn.pauses == 3                  # one pause between each two of the four pages
    assert (bot.commits, bot.locked) == (3, 0)
    # The rows the bot wrote during the read have rowids above the read's range, and the
    # ones committed before the last page are in it: proof the pages were separate snapshots.
    assert len(got) >= N
    assert sqlite3.connect(db).execute("SELECT count(*) FROM facts").fetchone()[0] == N + 3


def test_the_bot_cannot_commit_while_a_page_is_being_read(tmp_path):
    """The other side of the test above: inside a page the SHARED lock is held, so the
    check would catch a read transaction spanning pages."""
    db = make_store(tmp_path / "bot.db", wal=False, rows=rows(N))
    bot = Bot(db)
    with make_connector(source(db)) as conn:
        it = conn.iter_rows("SELECT id FROM facts ORDER BY rowid")
        next(it)                             # a statement is open: the lock is held
        bot.write()
        assert (bot.commits, bot.locked) == (0, 1)
        it.close()
        bot.write()
    assert (bot.commits, bot.locked) == (1, 1)


def test_a_wal_store_is_not_paced(tmp_path):
    db = make_store(tmp_path / "bot.db", wal=True, rows=rows(N))
    paused = []
    with make_connector(source(db)) as conn:
        assert not conn.rollback_journal()
        conn.yield_to_writer = True
        conn.sleep = paused.append
        assert len(list(conn.read())) == N
        assert len(list(conn.keys())) == N
    assert paused == [] and conn.pauses == 0


def test_the_pause_is_proportional_to_the_time_the_page_held_the_lock(tmp_path, monkeypatch):
    db = make_store(tmp_path / "bot.db", wal=False, rows=rows(N))
    ticks = iter(range(0, 10 ** 6, 4))       # a fake monotonic clock: each look moves 4 units
    monkeypatch.setattr(sqlite_mod.time, "monotonic", lambda: float(next(ticks)))
    monkeypatch.setattr(sqlite_mod.SqliteConnector, "_arm", lambda self: None)
    paused = []
    with make_connector(source(db)) as conn:
        conn.yield_to_writer = True
        conn.sleep = paused.append
        list(conn.read())
    assert paused and all(p == 4 * sqlite_mod.PACE_FACTOR for p in paused)


def test_a_one_shot_read_is_not_paced_but_the_daemon_s_is(tmp_path):
    from memwatch_overlay.overlay.daemon.loop import Daemon
    from memwatch_overlay.rules.config import parse_config

    db = make_store(tmp_path / "bot.db", wal=False, rows=rows(N))
    paused = []
    with make_connector(source(db)) as conn:
        conn.sleep = paused.append
        assert len(list(conn.read())) == N
    assert paused == [] and conn.pauses == 0
    cfg = parse_config({"overlay": {"path": str(tmp_path / "overlay.db")}, "detector": {"enabled": False},
                        "daemon": {"rescore_seconds": 3600, "deletion_scan_seconds": 3600,
                                   "heartbeat_seconds": 3600},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(db), "table": "facts",
                                     "id": "id", "text": "fact_value", "subject": "user_id",
                                     "created_at": "created_at", "updated_at": "updated_at"}]})
    with Daemon(cfg) as daemon:
        daemon.tick(force=True)
        connector = daemon.states[0].connector
        assert connector.yield_to_writer and connector.pauses == 3
