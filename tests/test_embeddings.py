"""The semantic layer with the real offline all-MiniLM-L6-v2 model (extra [embeddings])."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.embeddings

st = pytest.importorskip("sentence_transformers", reason="the [embeddings] extra is not installed")

from memwatch_overlay.overlay.detect.detector import Detector, FactView  # noqa: E402
from memwatch_overlay.overlay.detect.embeddings import (
    DEFAULT_MODEL_NAME,
    Embedder,
    VectorCache,
    default_model_path,
)
from memwatch_overlay.overlay.store.database import OverlayStore  # noqa: E402


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


def _add_facts(store: OverlayStore, texts: list[str]) -> list[int]:
    conn = store.conn
    sid = store.ensure_source("bot", "sqlite", "x.db", None)
    ids = []
    for i, t in enumerate(texts):
        cur = conn.execute(
            "INSERT INTO facts (source_id, tbl, pk, ref, subject, text, category, content_hash, "
            "first_seen, last_seen, seen_sync, changed_sync) VALUES (?, 't', ?, ?, 'u', ?, 'general', 'h', 0, 0, 1, 1)",
            (sid, json.dumps({"id": str(i)}), f"bot:t:{i}", t))
        ids.append(cur.lastrowid)
    return ids


def test_default_model_loads_offline_and_ranks_meaning(embedder):
    assert embedder.model_name == DEFAULT_MODEL_NAME
    assert embedder.model_path == default_model_path()
    assert embedder.dim == 384
    sims = embedder.similarities("She lives in Jakarta",
                                 ["Her home is in Jakarta, Indonesia", "He likes jazz records"])
    assert sims[0] > 0.6 > sims[1]
    m = embedder.embed(["a", "b"])
    assert m.shape == (2, 384)
    assert abs(float((m[0] * m[0]).sum()) - 1.0) < 1e-4      # normalised


def test_vectors_are_cached_in_the_overlay_with_the_model(tmp_path, embedder):
    with OverlayStore(tmp_path / "o.db") as store:
        ids = _add_facts(store, ["Lives in Oslo", "Works at Equinor", "Has two cats"])
        cache = VectorCache(store)
        facts = list(zip(ids, ["Lives in Oslo", "Works at Equinor", "Has two cats"]))
        fresh = Embedder()                           # an empty memory cache: must read the overlay
        assert cache.ensure(fresh, facts) == 3
        assert cache.models() == {DEFAULT_MODEL_NAME: 3}
        dims = {r[0] for r in store.conn.execute("SELECT dim FROM fact_vectors")}
        assert dims == {384}
        again = Embedder()
        assert cache.ensure(again, facts) == 0 and again.encoded == 0
        assert again.similarities("Lives in Oslo", ["Lives in Oslo"])[0] > 0.99
        # a changed text is embedded again
        store.conn.execute("UPDATE facts SET text = 'Lives in Bergen' WHERE id = ?", (ids[0],))
        assert cache.ensure(again, [(ids[0], "Lives in Bergen")] + facts[1:]) == 1


def test_vectors_of_another_model_are_found_and_reembedded(tmp_path, embedder):
    with OverlayStore(tmp_path / "o.db") as store:
        texts = ["Lives in Oslo", "Works at Equinor", "Has two cats"]
        ids = _add_facts(store, texts)
        cache = VectorCache(store)
        cache.ensure(embedder, list(zip(ids, texts)))
        store.conn.execute("UPDATE fact_vectors SET model = 'old-model', vector = zeroblob(8) "
                           "WHERE fact_id IN (?, ?)", ids[:2])
        assert cache.stale(embedder.model_name) == ids[:2]
        fresh = Embedder()
        assert cache.reembed_stale(fresh) == 2 and fresh.encoded == 2
        assert cache.stale(embedder.model_name) == []
        assert cache.models() == {DEFAULT_MODEL_NAME: 3}
        # and the rewritten vectors are real ones again
        blob = store.conn.execute("SELECT vector FROM fact_vectors WHERE fact_id = ?", (ids[0],)).fetchone()[0]
        assert len(blob) == 384 * 4


def test_a_model_named_by_directory(tmp_path):
    e = Embedder(default_model_path())
    assert e.model_name == default_model_path() != DEFAULT_MODEL_NAME
    assert e.embed(["hello"]).shape == (1, 384)


def test_semantic_layer_extends_cues_beyond_shared_words(embedder):
    old = FactView("o", "u", None, "Is Catholic", "belief", 0.0)
    rules = Detector(learned=False)     # (the default mode's pair model reads this one since stop 30)
    d = Detector(embedder=embedder, semantic_threshold=0.3)
    left = FactView("n", "u", None, "I left the church last year.", "belief", 10.0)
    assert rules.compare(left, [old]) == []
    [c] = d.compare(left, [old])
    assert c.kind == "semantic" and c.update["action"] == "EXPIRE" and "left" in c.evidence
    # similar but without a transition cue, or the cue is about someone else: nothing
    for text in ("Church was lovely this morning.", "My neighbour left the church last year."):
        assert d.compare(FactView("n2", "u", None, text, "belief", 10.0), [old]) == []
    # a strict threshold turns the semantic cue layer off for this weakly similar pair (the
    # embeddings-mode pair model, fitted since stop 35 with the pair corpus, flags it on its own)
    strict = Detector(embedder=embedder, semantic_threshold=0.9, learned=False)
    assert strict.compare(left, [old]) == []
    [c] = Detector(embedder=embedder, semantic_threshold=0.9).compare(left, [old])
    assert "learned pair model" in c.evidence


def test_sync_keeps_vectors_in_the_overlay_and_reembeds_after_a_model_change(tmp_path, embedder):
    import sqlite3

    from memwatch_overlay.overlay.engine.sync import SyncEngine
    from memwatch_overlay.core.timeparse import parse_timestamp
    from memwatch_overlay.rules.config import load_config
    from storegen import write_config

    db = tmp_path / "bot.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, fact_key TEXT, "
                 "content TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories (user_id, kind, content, created_at) VALUES (?, ?, ?, ?)",
                     [("u1", "location", "Lives in Rome", "2025-01-01 10:00:00"),
                      ("u1", "location", "We moved to Milan.", "2026-10-01 10:00:00"),
                      ("u2", "preference", "Likes jazz", "2025-03-01 10:00:00")])
    conn.commit()
    conn.close()
    cfg = load_config(write_config(tmp_path, db))
    with OverlayStore(tmp_path / "overlay.db") as overlay:
        det = Detector(embedder=embedder)
        engine = SyncEngine(overlay, cfg, detector=det)
        stats = engine.sync(cfg.sources[0], as_of=parse_timestamp("2026-11-29"), full=True)
        assert stats.contradictions == 1
        cache = VectorCache(overlay)
        # u2's one fact meets no other fact: it is not embedded (only candidates are)
        assert cache.models() == {DEFAULT_MODEL_NAME: 2}
        # another model made these vectors: the next sync finds and replaces them
        overlay.conn.execute("UPDATE fact_vectors SET model = 'old-model'")
        fresh = Embedder()
        engine = SyncEngine(overlay, cfg, detector=Detector(embedder=fresh))
        engine.sync(cfg.sources[0], as_of=parse_timestamp("2026-11-29"), full=False)
        assert cache.models() == {DEFAULT_MODEL_NAME: 2} and fresh.encoded == 2


def test_a_sync_embeds_many_blocks_in_few_model_calls_and_finds_the_same(tmp_path, monkeypatch):
    """200 users each move city: 200 blocks. Their facts go to the model in batches of about
    EMBED_BATCH texts, not one call per block, and what is found is what one call per block
    finds."""
    import shutil
    import sqlite3

    from memwatch_overlay.overlay.detect import blocks as detect_changed
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    from memwatch_overlay.core.timeparse import parse_timestamp
    from memwatch_overlay.rules.config import load_config
    from storegen import write_config

    users = 200
    db = tmp_path / "bot.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, fact_key TEXT, "
                 "content TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories (user_id, kind, content, created_at) VALUES (?, ?, ?, ?)",
                     [(f"u{i}", "location", f"Lives in Town {i}", "2025-01-01 10:00:00") for i in range(users)])
    conn.commit()
    cfg = load_config(write_config(tmp_path, db))
    with OverlayStore(tmp_path / "base.db") as overlay:      # the old facts, synced without detection
        SyncEngine(overlay, cfg, detector=None).sync(cfg.sources[0], as_of=parse_timestamp("2026-11-29"), full=True)
    conn.executemany("INSERT INTO memories (user_id, kind, content, created_at) VALUES (?, ?, ?, ?)",
                     [(f"u{i}", "location", f"We moved to Village {i}.", "2026-10-01 10:00:00") for i in range(users)])
    conn.commit()
    conn.close()

    def run(overlay_name: str) -> tuple[Embedder, list[tuple]]:
        shutil.copy(tmp_path / "base.db", tmp_path / overlay_name)
        with OverlayStore(tmp_path / overlay_name) as overlay:
            emb = Embedder()
            engine = SyncEngine(overlay, cfg, detector=Detector(embedder=emb))
            engine.sync(cfg.sources[0], as_of=parse_timestamp("2026-11-29"), full=False)
            found = overlay.conn.execute(
                "SELECT o.ref, n.ref, c.kind, round(c.confidence, 4), c.evidence FROM contradictions c "
                "JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id ORDER BY 1, 2").fetchall()
            assert VectorCache(overlay).models() == {DEFAULT_MODEL_NAME: 2 * users}
            return emb, [tuple(r) for r in found]

    batched, found = run("batched.db")
    assert len(found) == users
    assert batched.encoded == 2 * users
    assert batched.model_calls <= -(-2 * users // detect_changed.EMBED_BATCH) + 1
    monkeypatch.setattr(detect_changed, "EMBED_BATCH", 1)       # one model call per block
    per_block, found_per_block = run("per_block.db")
    assert per_block.model_calls >= users and found_per_block == found


def test_fixture_stores_planted_found_and_look_alikes_unflagged_with_embeddings(embedder):
    """The embeddings mode on every fixture manifest: each planted contradiction found, no
    other pair flagged, and no similar-but-not-contradicting pair flagged either way."""
    from conftest import load_manifest
    from test_contradictions_fixtures import FRAMEWORKS, _detect_all, _facts, _item_by_source

    d = Detector(embedder=embedder)
    for framework in FRAMEWORKS:
        manifest = load_manifest(framework)
        facts = _facts(manifest)
        planted = {(it["item_id"], _item_by_source(manifest, it["expected"]["contradicted_by"]))
                   for it in manifest["items"] if it["expected"].get("contradicted_by")}
        assert _detect_all(facts, d) == planted, framework
        for it in manifest["items"]:
            if it.get("similar_but_not_contradicting"):
                b = _item_by_source(manifest, it["similar_but_not_contradicting"])
                old, new = sorted((facts[it["item_id"]], facts[b]), key=lambda f: f.learned_at)
                assert d.compare(new, [old]) == [], f"{framework}: {old.text!r} flagged by {new.text!r}"


def test_the_subjects_own_name_is_not_what_makes_two_facts_alike(embedder):
    """MiniLM weighs a shared name heavily: the subject's name is encoded as "the user"."""
    d = Detector(embedder=embedder)
    named = FactView("o", "u_tomasz", None, "Tomasz works at Google on the Ads team.", "employment", 0.0)
    assert d.embedding_text(named) == "the user works at Google on the Ads team."
    other = FactView("n", "u_tomasz", None, "Google Cloud is the vendor for Tomasz's side project.", "general", 9.0)
    assert d.embedding_text(other).endswith("for the user's side project.")
    assert d.compare(other, [named]) == []
    # another person's name stays what it is
    assert "Marta" in d.embedding_text(FactView("x", "u_tomasz", None, "Marta moved to Gdansk", "general", 0.0))


def test_clauses_of_a_long_message_are_encoded_and_weighed(embedder):
    """A message that mixes topics: the clause about the older fact is found (cosine higher
    than the whole text's) and the pair is flagged."""
    from memwatch_overlay.overlay.detect.semantic_features import clauses
    d = Detector(embedder=embedder)
    old = FactView("o", "u", "city", "Lives in Leeds", "location", 0.0)
    text = "long week. anyway: settled into the new flat in Bristol, and the cat hates the stairs"
    assert len(clauses(text)) >= 2
    new = FactView("n", "u", None, text, "general", 100 * 86400.0)
    [f] = d.pair_features(new, [old])
    assert f["s_csim"] > f["sim"] and f["s_clauses"] > 0
    assert [c.older for c in d.compare(new, [old])] == ["o"]


def test_only_candidate_facts_are_encoded_once_and_a_reaudit_encodes_nothing(tmp_path):
    """Encodings counted on a real store: facts alone in their block (one memory of a user)
    are never encoded; each compared fact is encoded once with its clauses and cached in the
    overlay; a re-audit of the unchanged store encodes nothing; one new memory encodes that
    memory's texts and nothing of the facts already cached."""
    import sqlite3

    from memwatch_overlay.core.timeparse import parse_timestamp
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    from memwatch_overlay.rules.config import load_config
    from storegen import write_config

    db = tmp_path / "bot.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, fact_key TEXT, "
                 "content TEXT, created_at TEXT)")
    rows = [("u1", "Lives in Rome", "2025-01-01 10:00:00"),
            ("u1", "Works at a bakery. Loves the early shifts", "2025-02-01 10:00:00"),
            ("u1", "We moved to Milan: the flat is tiny", "2026-10-01 10:00:00")]
    rows += [(f"solo{i}", f"Likes jazz record number {i}", "2025-03-01 10:00:00") for i in range(5)]
    conn.executemany("INSERT INTO memories (user_id, content, created_at) VALUES (?, ?, ?)", rows)
    conn.commit()
    cfg = load_config(write_config(tmp_path, db))
    as_of = parse_timestamp("2026-11-29")
    with OverlayStore(tmp_path / "overlay.db") as overlay:
        emb = Embedder()
        det = Detector(embedder=emb)
        SyncEngine(overlay, cfg, detector=det).sync(cfg.sources[0], as_of=as_of, full=True)
        u1 = [FactView("", "u1", None, t, "", 0.0) for _, t, _ in rows[:3]]
        expected = {t for f in u1 for t in det.embedding_texts(f)}
        assert len(expected) > 3                         # clauses are encoded too
        assert emb.encoded == len(expected)
        assert VectorCache(overlay).models() == {DEFAULT_MODEL_NAME: 3}     # no solo fact
        # a re-audit of the unchanged store, with a fresh model: nothing encoded
        again = Embedder()
        SyncEngine(overlay, cfg, detector=Detector(embedder=again)).sync(cfg.sources[0], as_of=as_of, full=True)
        assert again.encoded == 0 and again.model_calls == 0
        # one new memory in u1's block: its texts alone are encoded (the others come from the overlay)
        conn.execute("INSERT INTO memories (user_id, content, created_at) VALUES "
                     "('u1', 'Sold the car, cycling everywhere now', '2026-11-01 10:00:00')")
        conn.commit()
        one = Embedder()
        d1 = Detector(embedder=one)
        SyncEngine(overlay, cfg, detector=d1).sync(cfg.sources[0], as_of=as_of, full=False)
        new = FactView("", "u1", None, "Sold the car, cycling everywhere now", "", 0.0)
        assert one.encoded == len(d1.embedding_texts(new))
    conn.close()


def test_one_off_events_do_not_outdate_each_other(embedder):
    """Notes of events ("had coffee with Tom ...") hold no state: a later, similar note with
    other names is not a contradiction, though the texts are alike and their values differ."""
    d = Detector(embedder=embedder)
    old = FactView("o", "u1", None, "Had coffee with Tom near the office in Leeds.", "general", 0.0)
    for i, text in enumerate(["Had coffee with Ana near the office in Leeds.",
                              "Had coffee with Ravi near the office in York."]):
        assert d.compare(FactView(f"n{i}", "u1", None, text, "general", 86400.0), [old]) == [], text
