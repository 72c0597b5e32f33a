"""The cost of contradiction detection, counted rather than timed: each distinct text is read
once, an unchanged text is not read again, the pair model builds features only for pairs its
gate admits, and a pair of texts met again is scored once."""
from __future__ import annotations

import inspect

import pytest

from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.detect.learned import Learned
from memwatch_overlay.overlay.detect.slots import Extractor
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import load_config

from storegen import write_config
from test_detect_blocks import _stamp, _user_store, _write, one_user_memories
from test_sync_contradictions import AS_OF


class Calls:
    """Counts the calls of some methods (and keeps what one of them returned)."""

    def __init__(self, monkeypatch, *targets):
        self.n: dict[str, int] = {}
        self.returned: dict[str, list] = {}
        for cls, name in targets:
            self._wrap(monkeypatch, cls, name)

    def _wrap(self, monkeypatch, cls, name):
        original = getattr(cls, name)

        def counted(*args, **kwargs):
            self.n[name] = self.n.get(name, 0) + 1
            out = original(*args, **kwargs)
            self.returned.setdefault(name, []).append(out)
            return out
        static = isinstance(inspect.getattr_static(cls, name), staticmethod)
        monkeypatch.setattr(cls, name, staticmethod(counted) if static else counted)

    def __getitem__(self, name: str) -> int:
        return self.n.get(name, 0)


def _two_user_rows(n: int) -> list[tuple]:
    rows = []
    for user in ("u1", "u2"):
        rows += [(user, c, k, t, _stamp(i * 5)) for i, (c, k, t) in enumerate(one_user_memories(n, seed=len(user)))]
    return rows + [("u3", "general", None, "Lives alone in Lonelytown", _stamp(1))]     # a block of one


def test_a_full_audit_reads_each_distinct_text_once(tmp_path, monkeypatch):
    rows = _two_user_rows(400)
    store = _write(tmp_path / "bot.db", rows)
    distinct = {text for user, _, _, text, _ in rows if user != "u3"}
    assert len(rows) == 801 and len(distinct) < 200     # the memories restate themselves a lot
    calls = Calls(monkeypatch, (Extractor, "read"))
    result = audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "o.db"))
    assert result.summary["total"] == 801
    result.close()
    assert calls["read"] == len(distinct)           # once per distinct text, whoever wrote it; the lone fact never


def test_an_unchanged_text_is_not_read_again(tmp_path, monkeypatch):
    """A re-audit of an unchanged store reads no text; a daemon's sync with one new memory
    in a block of many reads that memory alone (the others' readings are kept)."""
    store = _user_store(tmp_path / "bot.db", 150)
    audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "a.db")).close()
    calls = Calls(monkeypatch, (Extractor, "read"))
    audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "a.db")).close()
    assert calls["read"] == 0

    cfg = load_config(write_config(tmp_path, store))
    with OverlayStore(tmp_path / "daemon.db") as overlay:
        engine = SyncEngine(overlay, cfg, detector=Detector())
        engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        before = calls["read"]
        _write(store, [("u1", "employment", None, "I just joined Nokia as a tester.", "2026-11-20 10:00:00")])
        stats = engine.sync(cfg.sources[0], as_of=AS_OF, full=False)
    assert stats.records == 1 and stats.contradictions >= 1
    assert calls["read"] - before == 1


@pytest.fixture
def pair_calls(monkeypatch):
    return Calls(monkeypatch, (Learned, "features"), (Learned, "may_relate"), (Learned, "related"))


def test_pair_features_are_built_only_for_pairs_the_gate_admits(tmp_path, pair_calls):
    store = _user_store(tmp_path / "bot.db", 400)
    audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "o.db")).close()
    turned_away = pair_calls.returned["may_relate"].count(False)
    assert turned_away > 0 and pair_calls["features"] > 0
    assert pair_calls["features"] == pair_calls["may_relate"] - turned_away
    assert all(pair_calls.returned["related"])      # no features built for a pair the gate turns away


def _view(ref: str, text: str, key: str | None = None, days: float = 0.0) -> FactView:
    return FactView(ref, "u1", key, text, "general", 1_800_000_000.0 + days * 86400.0)


def test_a_pair_of_texts_met_again_is_scored_once(pair_calls):
    detector = Detector()
    old_text, new_text = "Lives in Leeds", "first week in Bristol, the new flat has no signal"
    first = detector.compare(_view("n1", new_text, days=200), [_view("o1", old_text, "city")])
    scored = pair_calls["features"]
    again = detector.compare(_view("n2", new_text, days=400), [_view("o2", old_text, "city", days=100)])
    assert scored == 1 and pair_calls["features"] == 1          # the second meeting built nothing
    assert [(c.older, c.newer) for c in first] == [("o1", "n1")]
    assert [(c.older, c.newer) for c in again] == [("o2", "n2")]
    assert [(c.kind, c.confidence, c.evidence, c.update) for c in first] == \
        [(c.kind, c.confidence, c.evidence, c.update) for c in again]


def test_the_candidate_index_reads_topics_only_and_pairs_read_the_rest(tmp_path, monkeypatch):
    """Every fact's likeliest topics index it; the rest of what the pair model reads of a
    text (cue lexicons, content words, values) is read only for texts that meet in a pair."""
    seen: dict[str, set[str]] = {"topics": set(), "info": set(), "pairs": set()}
    topics, info, may_relate = Learned._topics, Learned.info, Learned.may_relate

    def topics_read(self, text):
        seen["topics"].add(text)
        return topics(self, text)

    def info_read(self, text):
        seen["info"].add(text)
        return info(self, text)

    def pair_met(self, new_text, old_text, old_key, wide=True, linked=False):
        seen["pairs"].update((new_text, self.old_text(old_text, old_key)))
        return may_relate(self, new_text, old_text, old_key, wide, linked)
    monkeypatch.setattr(Learned, "_topics", topics_read)
    monkeypatch.setattr(Learned, "info", info_read)
    monkeypatch.setattr(Learned, "may_relate", pair_met)
    store = _user_store(tmp_path / "bot.db", 400)
    audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "o.db")).close()
    assert seen["info"] and seen["info"] <= seen["pairs"]
    assert len(seen["info"]) < len(seen["topics"])      # some texts never meet in a pair


NAMED_TEXTS = ["Coffee for Alice is always black", "Alice's new job at Stripe starts Monday",
               "alice no longer drinks coffee", "Alic is a nickname", "Bess sold the car",
               "John left Deloitte, Johnson stayed", "Bob is no longer with Globex", "I work at Bob's Bakery",
               "My handle is @alice_w", "Lives in Alicante", "Biscuit is no longer with us"]


@pytest.mark.parametrize("subject", [None, "u1", "u_alice", "alice", "user_bob", "bess", "johnson", "u123"])
def test_a_text_read_once_for_many_subjects_reads_as_it_would_for_each(subject):
    """The reading shared by subjects whose name a text does not mention equals the
    subject's own reading (the names left out of its anchors and cue scopes)."""
    from contradiction_cases import PARAPHRASES
    from memwatch_overlay.overlay.detect.detector import _without_names, subject_words
    texts = NAMED_TEXTS + [t for o, _, n, _ in PARAPHRASES for t in (o, n)]
    shared = Detector()
    for other in ("u_carol", None):         # other subjects read these texts first
        for t in texts:
            shared.read(FactView("x", other, None, t, "general", 0.0))
    words = subject_words(subject)
    reference = Detector().extractor
    for t in texts:
        expected = reference.read(t, words)
        if words:
            expected = _without_names(expected, words)
        assert shared.read(FactView("r", subject, None, t, "general", 0.0)) == expected, (subject, t)


def test_the_same_memory_of_many_users_is_extracted_once(tmp_path, monkeypatch):
    rows = [(f"u{i}", "preference", None, text, _stamp(i * 3 + j))
            for i in range(40) for j, text in enumerate(["I love sushi.", "I do not like sushi anymore.",
                                                         "Prefers e-mail over phone calls."])]
    rows += [("u_alice", "general", None, "Alice does not like sushi anymore.", _stamp(1)),
             ("u_alice", "preference", None, "I love sushi.", _stamp(0))]
    store = _write(tmp_path / "bot.db", rows)
    calls = Calls(monkeypatch, (Extractor, "read"))
    result = audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "o.db"))
    assert result.summary["total"] == 122 and result.count_contradictions() >= 40
    result.close()
    # four distinct texts, and one more reading of the text that names its user
    assert calls["read"] == 5


@pytest.mark.parametrize("enabled", [True, False])
def test_the_cyclic_collector_is_paused_during_the_walk_and_restored(tmp_path, monkeypatch, enabled):
    """Blocks are walked with Python's cyclic collector paused (blocks._collector_paused): it
    is off while the detector compares, as it was before once the audit is done, and objects
    the process froze itself stay frozen."""
    import gc
    store = _user_store(tmp_path / "bot.db", 60)
    seen: list[bool] = []
    compare = Detector.compare

    def watched(self, *args, **kwargs):
        seen.append(gc.isenabled())
        return compare(self, *args, **kwargs)
    monkeypatch.setattr(Detector, "compare", watched)
    frozen = gc.get_freeze_count()
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "o.db")).close()
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert seen and not any(seen)
    assert gc.get_freeze_count() == frozen


def test_a_small_walk_leaves_the_collector_generations_alone(tmp_path, monkeypatch):
    """Only a walk that left many young objects hands them to the oldest generation at once
    (gc.freeze + unfreeze); a small one, as a daemon's tick, does not."""
    import gc
    store = _user_store(tmp_path / "bot.db", 40)
    audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "warm.db")).close()   # models loaded
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.get_count()))
    monkeypatch.setattr(gc, "unfreeze", lambda: None)
    audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "o.db")).close()
    assert frozen == []
