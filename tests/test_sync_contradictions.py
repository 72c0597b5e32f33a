"""Contradiction detection inside sync and audit: blocks, incremental work, persisted flags."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import fixture_stores

from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.detect.detector import Detector
from memwatch_overlay.overlay.detect.blocks import make_detector
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.rules.config import load_config, parse_config

from storegen import write_config

AGENT_STORES = Path(__file__).parent / "fixtures" / "agent-stores"
AS_OF = parse_timestamp("2026-11-29")
CATS = ("employment", "location", "preference", "contact")
# What each category's notes say: small talk that names no slot (no city, employer, phone ...),
# so no two notes, and no note and a town, share a slot, a key, a cue word or a likely topic.
NOTES = {"employment": "asked about the weather", "location": "the sky was clear tonight",
         "preference": "the cat sat on the mat", "contact": "the blue folder is on the top shelf"}


def _store(path: Path, users: int = 10, per_block: int = 5, town: bool = False) -> Path:
    """users x 4 categories x per_block facts; u3's location block holds "Lives in Bergen".

    With ``town`` every location fact names a town, so every pair of a location block is a
    candidate for the detector."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, "
                 "fact_key TEXT, content TEXT, created_at TEXT)")
    rows, i = [], 0
    for u in range(users):
        for cat in CATS:
            for j in range(per_block):
                i += 1
                text = "Lives in Bergen" if (u == 3 and cat == "location" and j == 0) else f"Note {j}: {NOTES[cat]}"
                if town and cat == "location" and text != "Lives in Bergen":
                    text = f"Lives in Town{u}x{j}"
                rows.append((i, f"u{u}", cat, None, text, f"2025-0{1 + j}-10 10:00:00"))
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def _add(path: Path, *rows) -> None:
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO memories (user_id, kind, fact_key, content, created_at) VALUES (?, ?, ?, ?, ?)",
                     rows)
    conn.commit()
    conn.close()


def test_one_new_fact_costs_its_block_not_the_store(tmp_path):
    store_path = _store(tmp_path / "bot.db", town=True)
    cfg = load_config(write_config(tmp_path, store_path))
    det = Detector()
    with OverlayStore(tmp_path / "overlay.db") as overlay:
        engine = SyncEngine(overlay, cfg, detector=det)
        first = engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        # every fact is new. Contradictions are supersession edges (DESIGN.md): walked oldest
        # first, town k meets only the town still held (k-1) and outdates it; notes share no
        # slot, key or cue word with anything and meet nobody
        assert first.comparisons == 10 * 4
        assert first.contradictions == 10 * 4          # each town outdated by the next one only
        _add(store_path, ("u3", "location", None, "I moved to Oslo last month.", "2026-11-01 09:00:00"))
        second = engine.sync(cfg.sources[0], as_of=AS_OF, full=False)
        assert second.records == 1
        assert second.comparisons == 5                    # its block walked again, not the 200 facts
        assert second.contradictions == 1                 # the one new edge: the last town -> Oslo
        rows = overlay.conn.execute(
            "SELECT o.text, o.status, n.text, c.kind, c.confidence, c.update_json FROM contradictions c "
            "JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id").fetchall()
        assert len(rows) == 41
        oslo = [r for r in rows if r[2] == "I moved to Oslo last month."]
        assert len(oslo) == 1 and all(r[1] == "contradicted" and r[3] == "value" for r in oslo)
        assert oslo[0][0] == "Lives in Town3x4"
        assert {json.loads(r[5])["new_value"] for r in oslo} == {"Oslo"}
        u3 = overlay.conn.execute("SELECT text, status FROM facts WHERE subject = 'u3' AND category = "
                                  "'location'").fetchall()
        assert {t for t, st in u3 if st == "active"} == {"I moved to Oslo last month."}
        # nothing changed: nothing compared
        third = engine.sync(cfg.sources[0], as_of=AS_OF, full=False)
        assert third.comparisons == 0 and third.records == 0


def test_facts_that_share_nothing_are_not_compared(tmp_path):
    store_path = _store(tmp_path / "bot.db")          # notes only, and one town
    cfg = load_config(write_config(tmp_path, store_path))
    with OverlayStore(tmp_path / "overlay.db") as overlay:
        engine = SyncEngine(overlay, cfg, detector=Detector())
        assert engine.sync(cfg.sources[0], as_of=AS_OF, full=True).comparisons == 0
        _add(store_path, ("u3", "location", None, "I moved to Oslo last month.", "2026-11-01 09:00:00"))
        second = engine.sync(cfg.sources[0], as_of=AS_OF, full=False)
        assert (second.comparisons, second.contradictions) == (1, 1)     # only "Lives in Bergen"


def test_a_changed_older_fact_is_judged_again_against_newer_ones(tmp_path):
    store_path = _store(tmp_path / "bot.db", users=1, per_block=2)
    _add(store_path, ("u0", "location", None, "We moved to Tromso in spring.", "2026-06-01 09:00:00"))
    cfg = load_config(write_config(tmp_path, store_path))
    with OverlayStore(tmp_path / "overlay.db") as overlay:
        engine = SyncEngine(overlay, cfg, detector=Detector())
        engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        assert overlay.conn.execute("SELECT count(*) FROM contradictions").fetchone()[0] == 0
        conn = sqlite3.connect(store_path)          # the bot rewrites an older memory
        conn.execute("UPDATE memories SET content = 'Lives in Bodo' WHERE user_id = 'u0' AND kind = 'location' "
                     "AND content LIKE 'Note 0%'")
        conn.commit()
        conn.close()
        stats = engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        assert stats.contradictions == 1
        (older, newer), = overlay.conn.execute(
            "SELECT o.text, n.text FROM contradictions c JOIN facts o ON o.id = c.older_id "
            "JOIN facts n ON n.id = c.newer_id").fetchall()
        assert (older, newer) == ("Lives in Bodo", "We moved to Tromso in spring.")


def test_other_subjects_are_never_compared_and_categories_do_not_separate(tmp_path):
    """Blocks are subjects (DESIGN.md): u1's Oslo never meets u0's towns, while u0's
    "Lives in Paris", filed under employment by the store, does outdate u0's Bergen."""
    store_path = _store(tmp_path / "bot.db", users=2, per_block=1)
    _add(store_path, ("u1", "location", None, "Lives in Oslo", "2026-11-01 09:00:00"),
         ("u0", "employment", None, "Lives in Paris", "2026-11-02 09:00:00"))
    conn = sqlite3.connect(store_path)
    conn.execute("UPDATE memories SET content = 'Lives in Bergen' WHERE user_id = 'u0' AND kind = 'location'")
    conn.commit()
    conn.close()
    cfg = load_config(write_config(tmp_path, store_path))
    result = audit(config=cfg, as_of=AS_OF, detector=Detector())
    try:
        facts = {f["ref"]: f for f in result.iter_facts()}
        found = [(facts[c["older"]]["text"], facts[c["newer"]]["text"], facts[c["older"]]["subject"],
                  facts[c["newer"]]["subject"]) for c in result.contradictions()]
        assert found == [("Lives in Bergen", "Lives in Paris", "u0", "u0")]
    finally:
        result.close()


# -- the fixture stores, end to end ------------------------------------------------------

FIXTURES = {name: list(f.stores) for name, f in fixture_stores.of_kind("sqlite").items()}


@pytest.mark.parametrize("framework", list(FIXTURES))
def test_fixture_audit_flags_exactly_the_planted_contradictions(tmp_path, agent_store, framework):
    folder = agent_store(framework)
    manifest = json.loads((folder / "manifest.json").read_text())
    facts, found, reports = {}, set(), []
    for i, file in enumerate(FIXTURES[framework]):
        result = audit(str(folder / file), as_of=parse_timestamp(manifest["reference_time"]),
                       overlay_path=str(tmp_path / f"o{i}.db"))
        try:
            for f in result.iter_facts():
                facts[(file if framework == "memlife" else None, json.dumps(f["pk"], sort_keys=True))] = f
            for c in result.contradictions():
                found.add((c["older"], c["newer"]))
                reports.append(c)
        finally:
            result.close()

    def ref(item, source=None):
        source = source or item["source"]
        file = source.get("file") if framework == "memlife" else None
        return facts[(file, json.dumps({k: str(v) for k, v in source["pk"].items()}, sort_keys=True))]["ref"]

    planted = {(ref(it), ref(it, it["expected"]["contradicted_by"]))
               for it in manifest["items"] if it["expected"].get("contradicted_by")}
    assert planted and found == planted
    by_ref = {f["ref"]: f for f in facts.values()}
    for older, newer in planted:
        assert by_ref[older]["status"] == "contradicted" and newer in by_ref[older]["contradicted_by"]
    for c in reports:
        assert c["kind"] in ("value", "cue", "semantic", "judge") and 0 < c["confidence"] <= 1 and c["evidence"]


# -- configuration ------------------------------------------------------------------------

def test_detector_sections_are_validated():
    cfg = parse_config({"detector": {"min_confidence": 0.7}, "embeddings": {"enabled": False},
                        "judge": {"url": "http://127.0.0.1:11434/v1", "model": "m", "timeout": 5}})
    d = make_detector(cfg)
    assert d.min_confidence == 0.7 and d.embedder is None and d.judge.model == "m"
    assert make_detector(parse_config({"detector": {"enabled": False}})) is None
    for raw, field in (({"detector": {"colour": 1}}, "detector.colour"),
                       ({"detector": {"min_confidence": 2}}, "detector.min_confidence"),
                       ({"embeddings": {"threshold": "high"}}, "embeddings.threshold"),
                       ({"judge": {"model": "m"}}, "judge.url"),
                       ({"judge": {"url": "http://x", "timeout": 0}}, "judge.timeout")):
        with pytest.raises(ConfigError) as e:
            parse_config(raw)
        assert e.value.field == field


def test_detector_pack_path_is_relative_to_the_config(tmp_path):
    (tmp_path / "mine.toml").write_text("version = 1\n[[slots]]\nname = 'x'\ncategory = 'fact'\nassert = ['zz{VAL}']\n")
    (tmp_path / "memwatch.toml").write_text('[detector]\npack = "mine.toml"\n')
    d = make_detector(load_config(tmp_path / "memwatch.toml"))
    assert [s.name for s in d.pack.slots] == ["x"]
    (tmp_path / "memwatch.toml").write_text('[detector]\npack = "missing.toml"\n')
    with pytest.raises(ConfigError, match="missing.toml"):
        make_detector(load_config(tmp_path / "memwatch.toml"))


def test_disabled_detector_finds_nothing(tmp_path):
    store_path = _store(tmp_path / "bot.db", users=1, per_block=1)
    _add(store_path, ("u0", "location", None, "Lives in Oslo", "2026-11-01 09:00:00"),
         ("u0", "location", None, "We moved to Rome.", "2026-11-20 09:00:00"))
    cfg_path = write_config(tmp_path, store_path)
    for enabled, expected in (("true", 1), ("false", 0)):
        cfg_path.write_text(cfg_path.read_text().split("[detector]")[0] + f"\n[detector]\nenabled = {enabled}\n")
        result = audit(config=load_config(cfg_path), as_of=AS_OF, overlay_path=str(tmp_path / f"o{enabled}.db"))
        try:
            assert len(list(result.contradictions())) == expected
        finally:
            result.close()


def test_block_index_loses_nothing_the_rules_would_find():
    """Candidates from the index find exactly what comparing every pair finds."""
    from memwatch_overlay.overlay.detect.detector import FactView
    from memwatch_overlay.overlay.detect.blocks import BlockIndex

    from contradiction_cases import PARAPHRASES
    texts = [t for old, _, new, _ in PARAPHRASES for t in (old, new)]
    views = {i: FactView(f"f{i}", "u", None, t, "general", float(i)) for i, t in enumerate(texts)}
    det = Detector()
    brute = {(c.older, c.newer) for i, v in views.items()
             for c in det.compare(v, [views[j] for j in range(i)])}
    index = BlockIndex(det, views)
    before = det.comparisons
    indexed = {(c.older, c.newer) for i, v in views.items()
               for c in det.compare(v, [views[j] for j in index.candidates(i) if j < i])}
    assert len(brute) > 50 and indexed == brute
    assert det.comparisons - before < len(views) * (len(views) - 1) / 2 / 5   # far fewer pairs
    reverse = {(views[i].ref, views[j].ref) for i in views for j in index.could_outdate(i) if j > i}
    assert brute <= reverse


def test_mcp_memory_graph_without_timestamps(tmp_path, agent_store):
    """Observations are listed oldest first; relations are another table with no order
    relative to them, so only pairs within one table are judged."""
    folder = agent_store("mcp-memory")
    manifest = json.loads((folder / "manifest.json").read_text())
    result = audit(str(folder / "memory.jsonl"), as_of=parse_timestamp(manifest["reference_time"]),
                   overlay_path=str(tmp_path / "o.db"))
    try:
        facts = {f["ref"]: f for f in result.iter_facts()}
        found = {(c["older"], c["newer"]) for c in result.contradictions()}
    finally:
        result.close()
    by_text = {(f["subject"], f["text"]): ref for ref, f in facts.items() if f["table"] == "observations"}
    items = {it["source"]["json_path"] + it["source"]["entity"]: it for it in manifest["items"]}

    def ref(source):
        it = items[source["json_path"] + source["entity"]]
        return by_text[(source["entity"], it["text"])]

    planted = {(ref(it["source"]), ref(it["expected"]["contradicted_by"]))
               for it in manifest["items"] if it["expected"].get("contradicted_by")}
    assert len(planted) == 5 and planted <= found
    for older, newer in found - planted:          # what else is flagged stays inside one table
        assert facts[older]["table"] == facts[newer]["table"] == "relations"


def test_a_first_audit_marks_statuses_as_it_stores_edges(tmp_path, monkeypatch):
    """A first audit (nothing contradicted yet) marks each edge's older fact as the edge is
    stored and runs no pass over every fact; the statuses are what that pass gives. A later
    full sync over an overlay that holds contradictions takes the pass again."""
    store_path = _store(tmp_path / "bot.db", town=True)
    cfg = load_config(write_config(tmp_path, store_path))
    passes: list[object] = []
    real = OverlayStore.apply_contradiction_status

    def counted(self, *args, **kwargs):
        passes.append(kwargs.get("fact_ids"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(OverlayStore, "apply_contradiction_status", counted)
    with OverlayStore(tmp_path / "overlay.db") as overlay:
        engine = SyncEngine(overlay, cfg, detector=Detector())
        first = engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        assert first.contradictions == 10 * 4
        assert passes == []
        marked = dict(overlay.conn.execute("SELECT id, status FROM facts").fetchall())
        assert list(marked.values()).count("contradicted") == 10 * 4
        with overlay.transaction():
            real(overlay)                   # the pass over every fact changes nothing
        assert dict(overlay.conn.execute("SELECT id, status FROM facts").fetchall()) == marked
        _add(store_path, ("u3", "location", None, "I moved to Oslo last month.", "2026-11-01 09:00:00"))
        engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        assert passes == [None]             # contradictions were stored: the whole pass
        assert overlay.conn.execute("SELECT count(*) FROM facts WHERE status = 'contradicted'").fetchone()[0] == 41
