"""Keyed blocks: a user's memories that all carry a meaningful store key, no two keys of one
slot (a home-made key-value table). The learned layer weighs none of their pairs the keys
settle, so a walk indexes them without its topic and name terms and never estimates their
topics; it finds exactly what a walk with those terms finds, and a fact that ends the
keyed state (no key, a second key of one slot) brings the terms back."""
from __future__ import annotations

import random

import pytest

from memwatch_overlay.overlay.detect import blocks
from memwatch_overlay.overlay.detect.blocks import BlockIndex
from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.detect.learned import Learned
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import load_config

from storegen import write_config
from test_detect_blocks import _edges, _stamp, _write
from test_sync_contradictions import AS_OF

EMPLOYERS = ["Google", "Stripe", "Canva", "Klarna", "Monzo", "Adyen"]
CITIES = ["Oslo", "Leeds", "Lisbon", "Quito", "Osaka", "Denver"]


def keyed_memories(n: int, seed: int = 5) -> list[tuple[str, str, str]]:
    """(category, key, text) of one user's n key-value memories, oldest first: values that
    change, values restated, several values of many-valued keys, a key spelt two ways."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        r = rnd.random()
        if r < 0.25:
            out.append(("employment", rnd.choice(["employer", "Employer "]), f"Works at {rnd.choice(EMPLOYERS)}"))
        elif r < 0.5:
            out.append(("location", "city", f"Lives in {rnd.choice(CITIES)}"))
        elif r < 0.7:
            out.append(("general", "language", f"Speaks {rnd.choice(['Spanish', 'French', 'Thai'])}"))
        elif r < 0.85:
            out.append(("contact", "email", f"me{rnd.randrange(4)}@example.com"))
        else:
            out.append(("preference", "food", f"Loves {rnd.choice(['sushi', 'ramen', 'tacos'])}"))
    return out


def _sync(tmp_path, store, name: str, ticks: list[list] = ()) -> tuple[set, dict, int]:
    """(edges, statuses by ref, topic texts estimated) after a full sync and incremental ticks."""
    cfg = load_config(write_config(tmp_path, store))
    estimated = []
    original = Learned._topics

    def counted(self, text):
        estimated.append(text)
        return original(self, text)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Learned, "_topics", counted)
        with OverlayStore(tmp_path / f"{name}.db") as overlay:
            engine = SyncEngine(overlay, cfg, detector=Detector())
            engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
            for rows in ticks:
                _write(store, rows)
                engine.sync(cfg.sources[0], as_of=AS_OF, full=False)
            statuses = dict(overlay.conn.execute("SELECT ref, status FROM facts").fetchall())
            return _edges(overlay), statuses, len(estimated)


def _store(path, n: int):
    return _write(path, [("u1", c, k, t, _stamp(i * 5)) for i, (c, k, t) in enumerate(keyed_memories(n))])


def test_a_keyed_block_finds_what_a_walk_with_topics_finds_without_estimating_one(tmp_path, monkeypatch):
    (tmp_path / "keyed").mkdir()
    (tmp_path / "topics").mkdir()
    keyed = _sync(tmp_path / "keyed", _store(tmp_path / "keyed" / "bot.db", 400), "o")
    monkeypatch.setattr(Detector, "keyed_block", lambda self, keys, slots=None: None)
    with_topics = _sync(tmp_path / "topics", _store(tmp_path / "topics" / "bot.db", 400), "o")
    assert keyed[0] == with_topics[0] and len(keyed[0]) > 50
    assert keyed[1] == with_topics[1]
    assert keyed[2] == 0 < with_topics[2]


@pytest.mark.parametrize("newcomer", [
    ("location", None, "The commute from Oakland is killing me"),     # no key
    ("employment", "company", "Nokia"),                                # a second key of the employer slot
])
def test_a_fact_that_ends_the_keyed_state_brings_the_terms_back(tmp_path, monkeypatch, newcomer):
    """A daemon that kept the walk of a keyed block, then one memory that ends the keyed
    state: the walk starts again, and ends where a full sync of the same rows ends. The
    pair model flags at a low threshold here, so the newcomer outdates the older facts it
    meets on a topic alone (a walk that went on without their topics would not meet them)."""
    monkeypatch.setattr(blocks, "KEEP_WALK_MIN", 2)
    monkeypatch.setattr(Learned, "threshold", lambda self, mode: 0.05)
    category, key, text = newcomer
    late = [("u1", category, key, text, "2026-11-20 10:00:00")]
    (tmp_path / "tick").mkdir()
    (tmp_path / "full").mkdir()
    ticked = _sync(tmp_path / "tick", _store(tmp_path / "tick" / "bot.db", 300), "o", ticks=[late])
    store = _store(tmp_path / "full" / "bot.db", 300)
    _write(store, late)
    full = _sync(tmp_path / "full", store, "o")
    assert ticked[0] == full[0]
    assert ticked[1] == full[1]
    assert ticked[2] > 0 and full[2] > 0             # no longer keyed: its topics were estimated
    outdated_by_newcomer = [e for e in full[0] if e[1].startswith(text)]
    assert outdated_by_newcomer                      # the newcomer outdates the last employer


def _view(i: int, key: str | None, text: str) -> FactView:
    return FactView(f"s:t:{i}", "u1", key, text, "general", 1_700_000_000.0 + i)


def _keys(views: list[FactView]) -> list[str | None]:
    return [v.key for v in views]


def test_the_index_of_a_block_that_stops_being_keyed_holds_the_topics_of_every_fact():
    det = Detector()
    index = BlockIndex(det, {0: _view(0, "employer", "Works at Google"), 1: _view(1, "city", "Lives in Oslo")})
    assert index.keyed is not None
    assert not any(t[0] in ("topic", "link") for i in (0, 1) for t in index.terms[i] | index.wants[i])
    index.add({2: _view(2, None, "The commute from Oakland is killing me")})
    assert index.keyed is None
    assert all(any(t[0] == "topic" for t in index.terms[i]) for i in (0, 1, 2))
    assert index.all_ids == [0, 1, 2]


def test_which_blocks_are_keyed():
    det = Detector()
    views = [_view(0, "employer", "Works at Google"), _view(1, "city", "Lives in Oslo"),
             _view(2, "Employer ", "Works at Stripe"), _view(3, "food", "Loves ramen")]
    assert set(det.keyed_block(_keys(views))) == {"employer", "city", "food"}
    assert det.keyed_block(_keys(views + [_view(4, "company", "Nokia")])) is None        # two keys, one slot
    assert det.keyed_block(_keys(views + [_view(4, None, "I just joined Nokia.")])) is None
    assert det.keyed_block(_keys(views + [_view(4, "note", "Likes jazz")])) is None       # a generic key
    assert Detector(learned=False).keyed_block(_keys(views)) is None     # no learned layer: nothing to leave out
    walked = det.keyed_block(_keys(views[:2]))
    assert det.keyed_block(_keys([_view(5, "works_at", "Nokia")]), walked) is None      # against the facts walked
    assert det.keyed_block(_keys([_view(5, "language", "Speaks Thai")]), walked) is not None
