"""Blocks walked in worker processes (overlay/detect/parallel.py) give exactly what the
sync's own process gives: the same edges in the same order, the same fact statuses and
restatements, the same comparisons; a worker that dies leaves its batches to the sync's
process; and the choice of when to use workers is the one documented."""
from __future__ import annotations

import os
import random
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.detect import blocks, parallel
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import load_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_audit import agent_rows  # noqa: E402
from bench_detect import build  # noqa: E402

AS_OF = "2026-11-29"
NOTES = ["I just joined {c}.", "Started a new job at {c}.", "I work at {c}.", "We moved to {t} last month.",
         "I live in {t}.", "Handed in my notice at {c} today.", "Not vegetarian anymore, steak is back.",
         "I am vegetarian.", "We adopted a beagle named {d}.", "{d} passed away this winter."]


def _store(path: Path, users: int = 150, per_user: int = 20) -> Path:
    """A store of many users: six keys whose values change (bench_audit's agent table) and
    free-text notes that outdate each other, restate, and end states."""
    rnd = random.Random(3)
    rows = list(agent_rows(users * per_user // 2, users=users))
    for i in range(users * per_user // 2):
        text = rnd.choice(NOTES).format(c=rnd.choice(["Google", "Stripe", "Grab"]), t=rnd.choice(["Leeds", "Oslo"]),
                                        d=rnd.choice(["Biscuit", "Pepper"]))
        rows.append((f"u{i % users}", None, text, f"2026-{rnd.randrange(1, 12):02d}-{rnd.randrange(1, 28):02d} 10:00:00"))
    build(path, rows)
    return path


def _audit(store: Path, overlay: Path, tmp: Path, workers: int | None):
    cfg = tmp / f"w{workers}.toml"
    cfg.write_text("" if workers is None else f"[detector]\nworkers = {workers}\n")
    result = audit(str(store), load_config(str(cfg)), as_of=parse_as_of(AS_OF), overlay_path=str(overlay))
    comparisons = sum(s.comparisons for s in result.stats)
    result.close()
    conn = sqlite3.connect(overlay)
    try:
        edges = conn.execute("SELECT id, older_id, newer_id, kind, confidence, evidence, update_json "
                             "FROM contradictions ORDER BY id").fetchall()
        facts = conn.execute("SELECT id, status, confirmations, updated_at, freshness FROM facts ORDER BY id").fetchall()
    finally:
        conn.close()
    return edges, facts, comparisons


def test_workers_find_exactly_what_one_process_finds(tmp_path, monkeypatch):
    store = _store(tmp_path / "agent.db")
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 100)
    monkeypatch.setattr(parallel, "BATCH_FACTS", 500)        # several batches in flight
    walked = []
    real = parallel.ParallelWalks.walks

    def counting(self, gathered, **kw):
        for item in real(self, gathered, **kw):
            if item[2] is not None:         # walked by a worker
                walked.append(item[0])
            yield item
    monkeypatch.setattr(parallel.ParallelWalks, "walks", counting)
    serial = _audit(store, tmp_path / "one.db", tmp_path, None)
    assert not walked                       # the Python API walks in its own process by default
    two = _audit(store, tmp_path / "two.db", tmp_path, 2)
    assert len(walked) == 150               # every block went through the workers
    assert len(serial[0]) > 300             # planted: values change, notes end states
    assert two == serial


def test_a_block_a_daemon_keeps_is_walked_in_the_syncs_process(tmp_path, monkeypatch):
    """A user with hundreds of memories among many small users: the workers walk the small
    blocks, the sync's process the large one, and keeps its walk, so the daemon's next
    new memory of that user is one step, as without workers."""
    store = _store(tmp_path / "agent.db", users=40, per_user=10)
    conn = sqlite3.connect(store)
    conn.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)",
                     [("big", None, f"Note {i}: I work at Company{i % 7}.", f"2025-{1 + i % 12:02d}-{1 + i % 27:02d} 10:00:00")
                      for i in range(blocks.KEEP_WALK_MIN + 50)])
    conn.commit()
    conn.close()
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 100)
    serial = _audit(store, tmp_path / "one.db", tmp_path, None)
    cfg = tmp_path / "w2.toml"
    cfg.write_text("[detector]\nworkers = 2\n")
    config = load_config(str(cfg))
    from memwatch_overlay.overlay.engine.audit import resolve_sources
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    with OverlayStore(str(tmp_path / "two.db")) as overlay:
        cfg2, sources = resolve_sources(str(store), config, None, overlay)
        detector = blocks.make_detector(cfg2)
        engine = SyncEngine(overlay, cfg2, detector=detector)
        first = engine.sync(sources[0], as_of=parse_as_of(AS_OF), full=True)
        assert [k[1] for k in detector._kept_walks] == ["big"]     # kept, walked here
        edges = overlay.conn.execute("SELECT id, older_id, newer_id, kind, confidence, evidence, update_json "
                                     "FROM contradictions ORDER BY id").fetchall()
        assert [tuple(e) for e in edges] == serial[0] and first.comparisons == serial[2]
        conn = sqlite3.connect(store)
        conn.execute("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES "
                     "('big', NULL, 'I just joined Company3.', '2026-11-20 10:00:00')")
        conn.commit()
        conn.close()
        tick = engine.sync(sources[0], as_of=parse_as_of(AS_OF), full=False)
        assert tick.records == 1 and 0 < tick.comparisons <= 20


def test_a_worker_that_dies_leaves_its_batches_to_the_syncs_process(tmp_path, monkeypatch):
    store = _store(tmp_path / "agent.db", users=60)
    monkeypatch.setattr(parallel, "BATCH_FACTS", 40)         # 30 batches, at most 6 in flight
    serial = _audit(store, tmp_path / "one.db", tmp_path, None)
    overlay = OverlayStore(str(tmp_path / "one.db"))
    try:
        subjects = {r[0] for r in overlay.conn.execute("SELECT DISTINCT subject FROM facts")}
        gathered = list(blocks._scanned_blocks(overlay, [1], subjects, 1, 1))
        detector = blocks.make_detector(None)
        expected = [(blocks.stored_edges(edges), confirms)
                    for edges, confirms in (blocks.walk_block(detector, b, c) for b, c in gathered)]
        got = []
        with parallel.ParallelWalks(detector, 2) as pool:
            for i, (block, changed, edges, confirms) in enumerate(pool.walks(iter(gathered))):
                if i == 0:
                    for pid in list(pool._pool._processes):
                        os.kill(pid, signal.SIGKILL)
                got.append((edges, confirms) if len(block) >= 2 else None)
        assert pool.fallbacks >= 1
        assert got == [e if len(b) >= 2 else None for e, (b, _) in zip(expected, gathered)]
        assert sum(len(e) for e, _ in expected) == len(serial[0])
    finally:
        overlay.close()


def test_when_workers_walk_the_blocks(monkeypatch):
    detector = blocks.make_detector(None)
    assert detector.spawn_spec is not None and detector.workers is None
    monkeypatch.setattr(parallel, "cores", lambda: 4)
    n = parallel.PARALLEL_MIN
    assert parallel.workers_for(detector, n, None) == 0            # the API's default: in-process
    assert parallel.workers_for(detector, n, 3) == 3
    assert parallel.workers_for(detector, n, 16) == 4              # never more than the cores
    assert parallel.workers_for(detector, n - 1, 3) == 0           # too few changed facts
    monkeypatch.setattr(parallel, "DEFAULT_WORKERS", 4)            # the console script's default
    assert parallel.workers_for(detector, n, None) == 4
    assert parallel.workers_for(detector, n, 1) == 0               # `workers = 1`: in-process
    by_hand = blocks.Detector()
    assert parallel.workers_for(by_hand, n, 4) == 0                # cannot be rebuilt in a worker


@pytest.mark.parametrize("value", ["0", "65", '"two"', "1.5"])
def test_a_bad_workers_setting_is_a_config_error(tmp_path, value):
    from memwatch_overlay.core.errors import ConfigError
    cfg = tmp_path / "memwatch.toml"
    cfg.write_text(f"[detector]\nworkers = {value}\n")
    with pytest.raises(ConfigError, match="detector.workers"):
        load_config(str(cfg))


# The sync's process, in a subprocess: walks an overlay's blocks with two workers, prints the
# workers' pids after the first result and then waits (as a daemon killed mid-walk would).
KILLED_MID_WALK = """
import sys, time
from memwatch_overlay.overlay.detect import blocks, parallel
from memwatch_overlay.overlay.store.database import OverlayStore
if __name__ == "__main__":
    parallel.BATCH_FACTS = 40
    overlay = OverlayStore(sys.argv[1])
    subjects = {r[0] for r in overlay.conn.execute("SELECT DISTINCT subject FROM facts")}
    gathered = list(blocks._scanned_blocks(overlay, [1], subjects, 1, 1))
    pool = parallel.ParallelWalks(blocks.make_detector(None), 2)
    for _ in pool.walks(iter(gathered)):
        print(" ".join(str(p) for p in pool._pool._processes), flush=True)
        time.sleep(600)
"""


def test_workers_end_when_the_syncs_process_is_killed(tmp_path):
    import subprocess
    import time
    store = _store(tmp_path / "agent.db", users=60)
    _audit(store, tmp_path / "one.db", tmp_path, None)
    script = tmp_path / "walk.py"
    script.write_text(KILLED_MID_WALK)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "one.db")], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    finally:
        proc.kill()                         # kill -9 of the sync's process
        proc.wait()
    deadline = time.monotonic() + 10 * parallel.PARENT_CHECK_SECONDS + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, dead but not reaped by its new parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_subject_scan_reads_what_a_walk_reads_first(tmp_path):
    """The scan that gathers a first audit's blocks selects the walk's columns first (a worker
    is sent each row's first values), then what tells the changed facts; a column `facts`
    does not have is refused before it reaches SQL."""
    store = _store(tmp_path / "agent.db", users=20)
    _audit(store, tmp_path / "one.db", tmp_path, None)
    overlay = OverlayStore(str(tmp_path / "one.db"))
    try:
        rows = list(overlay.iter_subject_scan([1], blocks.SCAN_COLUMNS))
        assert rows and tuple(rows[0].keys()) == blocks.SCAN_COLUMNS
        everything = {r["id"]: r for r in overlay.iter_subject_scan([1])}
        assert parallel.walk_rows(rows) == [tuple(everything[r["id"]][c] for c in parallel.WALK_COLUMNS)
                                            for r in rows]
        with pytest.raises(ValueError, match="no column"):
            overlay.iter_subject_scan([1], ("id", "id; DROP TABLE facts"))
    finally:
        overlay.close()


def test_the_subject_scan_reads_the_subject_index_in_order_when_no_other_source_is_there(tmp_path):
    """A first audit's blocks stream out of facts_block in its order (no sort before the first
    row) when the overlay knows no source beside the scanned ones; with another source there,
    the scan keeps to its sources' facts. Either way: every live fact of them, by subject, id."""
    def scanned(overlay: OverlayStore, space: list[int]) -> tuple[list[int], str]:
        seen: list[str] = []
        overlay.conn.set_trace_callback(seen.append)
        try:
            ids = [r["id"] for r in overlay.iter_subject_scan(space, blocks.SCAN_COLUMNS)]
        finally:
            overlay.conn.set_trace_callback(None)
        select = next(s for s in seen if s.startswith("SELECT id"))
        plan = " | ".join(r[3] for r in overlay.conn.execute("EXPLAIN QUERY PLAN " + select))
        return ids, plan

    def expected(path: Path, space: list[int]) -> list[int]:
        conn = sqlite3.connect(path)
        try:
            return [r[0] for r in conn.execute(
                f"SELECT id FROM facts WHERE status IN ('active', 'contradicted') AND source_id IN "
                f"({', '.join('?' * len(space))}) ORDER BY subject, id", space)]
        finally:
            conn.close()

    path = tmp_path / "one.db"
    _audit(_store(tmp_path / "agent.db", users=20), path, tmp_path, None)
    overlay = OverlayStore(str(path))
    try:
        ids, plan = scanned(overlay, [1])
        assert ids == expected(path, [1]) and len(ids) > 100
        assert "facts_block" in plan and "TEMP B-TREE" not in plan
    finally:
        overlay.close()
    other = tmp_path / "other"
    other.mkdir()
    _audit(_store(other / "agent.db", users=7), path, tmp_path, None)      # a second source
    overlay = OverlayStore(str(path))
    try:
        ids, plan = scanned(overlay, [1])
        assert ids == expected(path, [1]) and "source_id" in plan
        both, plan = scanned(overlay, [1, 2])
        assert both == expected(path, [1, 2]) and len(both) > len(ids)
        assert "facts_block" in plan and "TEMP B-TREE" not in plan
    finally:
        overlay.close()


def test_a_large_first_load_starts_its_walkers_before_the_load(tmp_path, monkeypatch):
    """A staged first load with detection on starts the workers before it loads (they get
    ready while the load runs) and walks its blocks in them: the same edges and statuses as
    one process; the workers are stopped once the walks are back."""
    from memwatch_overlay.overlay.engine import sync as sync_module
    store = _store(tmp_path / "agent.db")
    serial = _audit(store, tmp_path / "one.db", tmp_path, None)
    monkeypatch.setattr(sync_module, "SQL_LOAD_MIN", 100)
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 100)
    seen = {}
    real_load, real_walks, real_close = (sync_module.SyncEngine._load_staged, parallel.ParallelWalks.walks,
                                         parallel.ParallelWalks.close)

    def load(self, *args, **kw):
        seen["walkers at the load"] = self._walkers
        return real_load(self, *args, **kw)

    def walks(self, gathered, **kw):
        seen["walked by"] = self
        yield from real_walks(self, gathered, **kw)
    def close(self, wait=True):
        seen.setdefault("closed", []).append((self, wait))
        real_close(self, wait)
    monkeypatch.setattr(sync_module.SyncEngine, "_load_staged", load)
    monkeypatch.setattr(parallel.ParallelWalks, "walks", walks)
    monkeypatch.setattr(parallel.ParallelWalks, "close", close)
    two = _audit(store, tmp_path / "two.db", tmp_path, 2)
    started = seen["walkers at the load"]
    assert isinstance(started, parallel.ParallelWalks) and seen["walked by"] is started
    assert two == serial and len(serial[0]) > 300
    assert seen["closed"] == [(started, False)]     # stopped once the walks were back, not waited for


@pytest.mark.parametrize("workers", [None, 2])
def test_the_walk_reports_its_progress_block_by_block_to_the_end(tmp_path, monkeypatch, workers):
    # a first audit of 3,000 facts of 150 users: the detection phase counts the facts whose
    # blocks are stored, in steps, up to every live fact, in the sync's process and with workers
    store = _store(tmp_path / "agent.db")
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 100)
    monkeypatch.setattr(parallel, "BATCH_FACTS", 500)
    calls = []

    def on_progress(source, n, total=None, phase=None, of=None):
        calls.append((n, phase, of))
    cfg = tmp_path / "w.toml"
    cfg.write_text("" if workers is None else f"[detector]\nworkers = {workers}\n")
    result = audit(str(store), load_config(str(cfg)), as_of=parse_as_of(AS_OF), overlay_path=str(tmp_path / "o.db"),
                   on_progress=on_progress)
    result.close()
    detecting = [(n, of) for n, phase, of in calls if phase == "detecting contradictions"]
    assert detecting and {of for _, of in detecting} == {3000}
    counts = [n for n, _ in detecting]
    assert counts == sorted(counts) and counts[-1] == 3000
    assert len(set(counts)) > 20            # as the blocks are stored, not once at the end
    # the phases before it are drawn as they were, without a count of their own
    assert any(phase == "scoring and detecting contradictions" and of is None for _, phase, of in calls)


def test_the_walks_progress_is_told_in_about_steps_not_per_block(tmp_path, monkeypatch):
    # 150 blocks of 20 facts: with STEPS at 10 the count is told about every 300 facts
    # (a million facts are some 50,000 blocks: a call per block would be 50,000 redraw checks)
    store = _store(tmp_path / "agent.db")
    monkeypatch.setattr(blocks._WalkProgress, "STEPS", 10)
    calls = []
    result = audit(str(store), None, as_of=parse_as_of(AS_OF), overlay_path=str(tmp_path / "o.db"),
                   on_progress=lambda source, n, total=None, phase=None, of=None: calls.append((n, phase)))
    result.close()
    counts = [n for n, phase in calls if phase == "detecting contradictions"]
    assert 9 <= len(counts) <= 12 and counts == sorted(counts) and counts[-1] == 3000
    assert all(b - a >= 300 for a, b in zip(counts, counts[1:-1]))
