"""Several daemons on one Postgres overlay: advisory-lock leases, takeover, fencing.

The lease module alone: fleet members here are real processes running tests/lease_worker.py
(the real lease module, overlay and sync engine in a tight loop); the daemon with leases is
tested in tests/test_daemon_fleet.py.
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.store.leases import LeaseLost, Leases, lock_key
from memwatch_overlay.overlay.engine.maintenance import source_status
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import load_config

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).parent / "lease_worker.py"
SOURCES = ["bot1", "bot2", "bot3", "bot4"]

pytestmark = pytest.mark.postgres


@pytest.fixture
def overlay_dsn(pg_database):
    dsn = pg_database("memwatch_lease")
    OverlayStore(dsn).close()             # migrated once, before any member starts
    return dsn


def _fleet_config(folder: Path, dsn: str) -> Path:
    blocks = [f'[overlay]\ndsn = "{dsn}"\n']
    for name in SOURCES:
        shutil.copy(ROOT / "examples" / "my_agent.db", folder / f"{name}.db")
        blocks.append(f'[[sources]]\nname = "{name}"\nconnector = "sqlite"\npath = "{name}.db"\n'
                      'preset = "generic"\ntable = "agent_facts"\nid = "id"\ntext = "fact_value"\n'
                      'key = "fact_key"\nsubject = "user_id"\ncreated_at = "created_at"\n')
    path = folder / "memwatch.toml"
    path.write_text("\n".join(blocks))
    return path


def _query(dsn: str, sql: str, params=()) -> list[tuple]:
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _holders(dsn: str) -> dict[str, str]:
    """source -> owner, for leases whose advisory lock is really held right now."""
    rows = _query(dsn, "SELECT source, owner FROM leases")
    held = {}
    for source, owner in rows:
        free = _query(dsn, "SELECT pg_try_advisory_lock(%s), pg_advisory_unlock_all()", (lock_key(source),))[0][0]
        if not free:
            held[source] = owner
    return held


def _synced_since(dsn: str, since: float, owners: tuple, times: int = 20) -> set[str]:
    """Sources synced at least `times` times since `since` by these owners."""
    rows = _query(dsn, "SELECT source, count(*) FROM sync_events WHERE owner = ANY(%s) AND started_at > %s "
                       "GROUP BY source", (list(owners), since))
    return {s for s, n in rows if n >= times}


def test_two_processes_split_sources_and_survive_a_kill_9(tmp_path, overlay_dsn):
    config = _fleet_config(tmp_path, overlay_dsn)
    assert load_config(config).overlay_dsn == overlay_dsn
    stop = tmp_path / "stop"
    procs = {}
    for owner in ("A", "B"):
        procs[owner] = subprocess.Popen([sys.executable, str(WORKER), overlay_dsn, str(config), owner, str(stop)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # both members hold two sources each, and every source is being synced
        _wait(lambda: sorted(_holders(overlay_dsn).values()) == ["A", "A", "B", "B"], 30, "an even split")
        a_sources = {s for s, o in _holders(overlay_dsn).items() if o == "A"}
        split_at = _query(overlay_dsn, "SELECT extract(epoch from clock_timestamp())")[0][0]
        _wait(lambda: _synced_since(overlay_dsn, split_at, ("A", "B")) == set(SOURCES), 60, "syncs by both")
        procs["A"].send_signal(signal.SIGKILL)
        procs["A"].wait(timeout=10)
        killed_at = _query(overlay_dsn, "SELECT extract(epoch from clock_timestamp())")[0][0]
        # B takes A's sources over and keeps every source synced
        _wait(lambda: _holders(overlay_dsn) == {s: "B" for s in SOURCES}, 30, "B to take over")
        _wait(lambda: _synced_since(overlay_dsn, killed_at, ("B",)) == set(SOURCES), 60,
              "B to sync every source after the kill")
    finally:
        stop.touch()
        for p in procs.values():
            if p.poll() is None:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
    assert procs["B"].returncode == 0, procs["B"].stderr.read()
    events = _query(overlay_dsn, "SELECT source, owner, epoch, started_at, finished_at FROM sync_events "
                                 "ORDER BY source, started_at")
    by_source = defaultdict(list)
    for e in events:
        by_source[e[0]].append(e)
    assert set(by_source) == set(SOURCES)
    for source, evs in by_source.items():
        assert all(e[4] is not None for e in evs)          # only committed syncs are recorded
        for prev, nxt in zip(evs, evs[1:]):
            assert prev[4] <= nxt[3], f"{source}: syncs by {prev[1]} and {nxt[1]} overlap"
            assert prev[2] <= nxt[2]                          # epochs only grow
            if prev[1] != nxt[1]:
                assert nxt[2] > prev[2]                       # a new owner holds a new epoch
        owners = [e[1] for e in evs]
        switches = sum(1 for a, b in zip(owners, owners[1:]) if a != b)
        assert switches <= 2, f"{source} changed hands {switches} times"
        if source in a_sources:
            assert owners[-1] == "B" and owners.count("A") >= 20
    # the overlay holds each source's facts once, whoever synced them
    rows = dict(_query(overlay_dsn, "SELECT s.name, count(*) FROM facts f JOIN sources s ON s.id = f.source_id "
                                    "GROUP BY s.name"))
    assert rows == {name: 12 for name in SOURCES}


def test_a_lost_lease_fences_the_old_holders_sync(tmp_path, overlay_dsn):
    config = load_config(_fleet_config(tmp_path, overlay_dsn))
    source = config.sources[0]
    with Leases(overlay_dsn, owner="old") as old, Leases(overlay_dsn, owner="new") as new, \
            OverlayStore(overlay_dsn) as store:
        assert old.claim([source.name]) == [source.name]
        assert new.claim([source.name]) == []                 # held: nobody else gets it
        engine = SyncEngine(store, config)
        engine.guard = old.guard
        engine.sync(source)
        # the old holder's lease session ends (as when its daemon hangs past idle_session_timeout)
        pid = old.session.info.backend_pid
        _query(overlay_dsn, "SELECT pg_terminate_backend(%s)", (pid,))
        _wait(lambda: new.claim([source.name]) == [source.name], 10, "the takeover")
        with pytest.raises(LeaseLost, match="taken over by new"):
            engine.sync(source)                               # its store connection still works
        assert old.heartbeat() == {source.name} or not old.holds(source.name)
        engine.guard = new.guard
        assert engine.sync(source).records == 12
        status = {s["name"]: s for s in source_status(None, overlay_dsn)["sources"]}
        assert status[source.name]["lease"]["owner"] == "new" and status[source.name]["lease"]["epoch"] == 2
        assert status[source.name]["rows_seen"] == 12
    events = _query(overlay_dsn, "SELECT owner, epoch FROM sync_events ORDER BY id")
    assert events == [("old", 1), ("new", 2)]


def test_fair_share_and_rebalance(overlay_dsn):
    names = ["s1", "s2", "s3"]
    with Leases(overlay_dsn, owner="one") as one:
        assert one.claim(names) == names                      # alone: everything
        with Leases(overlay_dsn, owner="two") as two:
            assert two.claim(names) == []
            assert one.fair_share(len(names)) == 2
            assert one.rebalance(names) == ["s3"]
            assert two.claim(names) == ["s3"]
        # `two` left: its lease frees and `one` may take all three again
        assert one.live_members() == 1
        assert one.claim(names) == ["s3"]


def test_a_takeover_waits_for_the_sync_in_flight(tmp_path, overlay_dsn):
    """The old holder's sync, begun under its lease, commits; the new holder gets the source after it."""
    config = load_config(_fleet_config(tmp_path, overlay_dsn))
    name = config.sources[0].name
    with Leases(overlay_dsn, owner="old", heartbeat_seconds=0.25) as old, \
            Leases(overlay_dsn, owner="new", heartbeat_seconds=0.25) as new, OverlayStore(overlay_dsn) as store:
        assert old.claim([name]) == [name]
        with store.transaction(), old.guard(store, name):
            _query(overlay_dsn, "SELECT pg_terminate_backend(%s)", (old.session.info.backend_pid,))
            # the advisory lock is free, but the lease row is locked by the sync in flight:
            # the claim gives up after lock_timeout and leaves the lock free again
            assert new.claim([name]) == []
            assert not new.holds(name)
        assert new.claim([name]) == [name]
        with pytest.raises(LeaseLost):
            with store.transaction(), old.guard(store, name):
                pass
    assert _query(overlay_dsn, "SELECT owner, epoch, finished_at IS NOT NULL FROM sync_events") == [("old", 1, True)]


def test_leases_refuse_a_sqlite_overlay(tmp_path, overlay_dsn):
    with Leases(overlay_dsn, owner="x") as leases, OverlayStore(tmp_path / "o.db") as store:
        leases.claim(["s"])
        with pytest.raises(ConfigError, match="Postgres"):
            with leases.guard(store, "s"):
                pass


def test_lease_errors_hide_the_password(pg_server_dsn):
    from psycopg import conninfo

    from conftest import pg_url
    from memwatch_overlay.core.errors import OverlayError
    dsn = pg_url({**conninfo.conninfo_to_dict(pg_server_dsn), "password": "pw-s3cret"}, "memwatch_none_x")
    with pytest.raises(OverlayError) as info:
        Leases(dsn, owner="x")
    assert "pw-s3cret" not in str(info.value) and "***" in str(info.value)
