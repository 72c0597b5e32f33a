"""Two `memwatch-overlay daemon` processes share one Postgres overlay: each source is
synced by one daemon at a time; after a kill -9 the survivor takes the dead one's sources
over; every row a bot writes meanwhile reaches the overlay; no two syncs of a source overlap
(checked from the overlay's `sync_events`, stamped by the server's clock)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from memwatch_overlay.overlay.store.leases import lock_key
from memwatch_overlay.overlay.engine.maintenance import source_status
from memwatch_overlay.overlay.store.database import OverlayStore
from test_daemon_process import console_script

SOURCES = ["bot1", "bot2", "bot3", "bot4"]
T0 = "2026-11-01T00:00:00Z"

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def overlay_dsn(pg_database):
    return pg_database("memwatch_fleet")


def _q(dsn: str, sql: str, params=()) -> list[tuple]:
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def _now(dsn: str) -> float:
    return _q(dsn, "SELECT extract(epoch from clock_timestamp())::float8")[0][0]


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _holders(dsn: str) -> dict[str, int]:
    """source -> pid of the daemon whose advisory lock on it is really held now."""
    held = {}
    for source, pid in _q(dsn, "SELECT source, pid FROM leases"):
        if not _q(dsn, "SELECT pg_try_advisory_lock(%s), pg_advisory_unlock_all()", (lock_key(source),))[0][0]:
            held[source] = pid
    return held


def _synced_since(dsn: str, since: float, pids: list[int], times: int) -> set[str]:
    rows = _q(dsn, "SELECT e.source, count(*) FROM sync_events e JOIN fleet_members m ON m.owner = e.owner "
                   "WHERE m.pid = ANY(%s) AND e.started_at > %s GROUP BY e.source", (pids, since))
    return {s for s, n in rows if n >= times}


class _Bot(threading.Thread):
    """Writes one fact into every source every 0.1 s, as four bots would."""

    def __init__(self, folder: Path):
        super().__init__(daemon=True)
        self.folder, self.stop, self.written = folder, threading.Event(), 0

    def run(self):
        conns = {n: sqlite3.connect(self.folder / f"{n}.db", timeout=5, isolation_level=None) for n in SOURCES}
        while not self.stop.is_set():
            self.written += 1
            for name, conn in conns.items():
                conn.execute("INSERT INTO facts (fact, created_at, updated_at) VALUES (?, ?, ?)",
                             (f"{name} fact {self.written}", T0, T0))
            self.stop.wait(0.1)
        for conn in conns.values():
            conn.close()


def _setup(folder: Path, dsn: str) -> Path:
    lines = [f'[overlay]\ndsn = "{dsn}"\n', "[daemon]", "debounce_seconds = 0.05", "max_delay_seconds = 0.3",
             "deletion_scan_seconds = 2", "rescore_seconds = 5", "heartbeat_seconds = 0.5",
             "backoff_initial_seconds = 0.2", "backoff_max_seconds = 1", "busy_timeout_seconds = 0.5"]
    for name in SOURCES:
        conn = sqlite3.connect(folder / f"{name}.db")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, fact TEXT, created_at TEXT, updated_at TEXT)")
        conn.commit()
        conn.close()
        lines += ["", "[[sources]]", f'name = "{name}"', 'connector = "sqlite"', f'path = "{name}.db"',
                  'table = "facts"', 'id = "id"', 'text = "fact"', 'created_at = "created_at"',
                  'updated_at = "updated_at"', "poll_seconds = 0.2"]
    conf = folder / "memwatch.toml"
    conf.write_text("\n".join(lines) + "\n")
    return conf


def test_two_daemons_split_the_sources_and_survive_a_kill_9(tmp_path, overlay_dsn):
    conf = _setup(tmp_path, overlay_dsn)
    OverlayStore(overlay_dsn).close()
    bot = _Bot(tmp_path)
    bot.start()
    logs = {}
    procs = []
    for i in range(2):
        logs[i] = open(tmp_path / f"daemon{i}.log", "w")
        procs.append(subprocess.Popen([console_script(), "daemon", "--config", str(conf), "--poll",
                                       "--log-format", "json"], stdout=subprocess.DEVNULL, stderr=logs[i],
                                      cwd=tmp_path))
    a, b = procs
    try:
        _wait(lambda: sorted(_holders(overlay_dsn).values()) == sorted([a.pid, a.pid, b.pid, b.pid]), 60,
              "an even split between the two daemons")
        a_sources = {s for s, pid in _holders(overlay_dsn).items() if pid == a.pid}
        # `status` (the real console script) names both daemons and what each holds
        out = subprocess.run([console_script(), "status", "--config", str(conf), "--format", "json"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert out.returncode == 0, out.stderr
        status = json.loads(out.stdout)
        assert status["daemon"]["running"] is True
        fleet = {d["pid"]: d for d in status["daemons"]}
        assert set(fleet) == {a.pid, b.pid} and all(d["alive"] for d in fleet.values())
        assert set(fleet[a.pid]["sources"]) == a_sources
        assert set(fleet[b.pid]["sources"]) == set(SOURCES) - a_sources
        assert all(s["lease"]["held"] for s in status["sources"])
        table = subprocess.run([console_script(), "status", "--config", str(conf)], capture_output=True,
                               text=True, cwd=tmp_path, timeout=60, env={**os.environ, "COLUMNS": "200"})
        assert f"2 daemons running: pid {a.pid}" in table.stdout or f"2 daemons running: pid {b.pid}" in table.stdout
        split_at = _now(overlay_dsn)
        _wait(lambda: _synced_since(overlay_dsn, split_at, [a.pid], 10) == a_sources
              and _synced_since(overlay_dsn, split_at, [b.pid], 10) == set(SOURCES) - a_sources, 60,
              "both daemons syncing their sources")
        a.send_signal(signal.SIGKILL)
        a.wait(timeout=10)
        killed_at = _now(overlay_dsn)
        _wait(lambda: set(_holders(overlay_dsn).values()) == {b.pid} and len(_holders(overlay_dsn)) == 4, 60,
              "the survivor to take every source")
        _wait(lambda: _synced_since(overlay_dsn, killed_at, [b.pid], 10) == set(SOURCES), 60,
              "the survivor syncing every source")
        after_kill = source_status(None, overlay_dsn)
        fleet = {d["pid"]: d for d in after_kill["daemons"]}
        assert fleet[b.pid]["alive"] and sorted(fleet[b.pid]["sources"]) == SOURCES
        assert a.pid not in fleet or not fleet[a.pid]["alive"]      # pruned, or seen dead
        assert after_kill["daemon"]["running"] is True
        bot.stop.set()
        bot.join(timeout=10)

        def caught_up():
            rows = dict(_q(overlay_dsn, "SELECT s.name, count(*) FROM facts f JOIN sources s ON s.id = f.source_id "
                                        "WHERE f.status = 'active' GROUP BY s.name"))
            return rows == {name: bot.written for name in SOURCES}
        _wait(caught_up, 60, "every row the bots wrote to reach the overlay")
    finally:
        bot.stop.set()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
        for f in logs.values():
            f.close()
    assert b.returncode == 0, (tmp_path / "daemon1.log").read_text()[-2000:]
    owners = dict(_q(overlay_dsn, "SELECT owner, pid FROM fleet_members")) or {}
    events = _q(overlay_dsn, "SELECT source, owner, epoch, started_at, finished_at FROM sync_events "
                             "ORDER BY source, started_at")
    by_source = defaultdict(list)
    for e in events:
        by_source[e[0]].append(e)
    assert set(by_source) == set(SOURCES)
    for source, evs in by_source.items():
        assert all(e[4] is not None and e[4] >= e[3] for e in evs)
        for prev, nxt in zip(evs, evs[1:]):
            assert prev[4] <= nxt[3], f"{source}: syncs by {prev[1]} and {nxt[1]} overlap"
            assert prev[2] <= nxt[2] and (prev[1] == nxt[1] or nxt[2] > prev[2])
        if source in a_sources:
            assert evs[-1][3] > killed_at and any(e[3] < killed_at for e in evs)
    # the dead daemon's lease rows name the survivor now; the survivor left the fleet cleanly
    assert set(owners.values()) <= {a.pid}            # SIGTERM: b removed itself; a's row stays stale
    final = source_status(None, overlay_dsn)
    assert final["daemon"]["running"] is False and not any(d["alive"] for d in final["daemons"])
    assert not any(s["lease"]["held"] for s in final["sources"] if "lease" in s)
    log_b = [json.loads(ln) for ln in (tmp_path / "daemon1.log").read_text().splitlines() if ln.startswith("{")]
    assert {e.get("source") for e in log_b if e.get("event") == "lease_taken"} >= a_sources
