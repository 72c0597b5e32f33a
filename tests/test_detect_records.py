"""The detector's records (Slot, CueHit, Reading, FactView, Contradiction) behave as frozen ones.

They are plain dataclasses with a generated hash (not frozen=True, for speed: see the comment
above slots.Slot), so what frozen=True enforced is held here instead:
- equal records hash equal and meet in sets and dict keys; replace() leaves the record as it was;
- nothing changes a record once made: a sync with detection over one user's changing
  memories, and readings, index terms and comparisons of every test text, run with each
  class refusing any assignment to a field it already holds.
"""
from __future__ import annotations

import dataclasses

import pytest

from memwatch_overlay.overlay.detect.detector import Contradiction, Detector, FactView
from memwatch_overlay.overlay.detect.slots import CueHit, Reading, Slot
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import load_config

from storegen import write_config
from test_detect_blocks import _user_store
from test_slot_prefilter import _texts
from test_sync_contradictions import AS_OF

RECORDS = (Slot, CueHit, Reading, FactView, Contradiction)


def _made(cls, salt: str = ""):
    """A record of `cls` with every field given (strings salted), hashable values only."""
    values = {}
    for f in dataclasses.fields(cls):
        t = str(f.type)
        if "tuple" in t:
            values[f.name] = ("a" + salt,)
        elif "frozenset" in t:
            values[f.name] = frozenset({"b" + salt})
        elif "float" in t:
            values[f.name] = 1.5
        elif "int" in t:
            values[f.name] = 3
        elif "bool" in t:
            values[f.name] = True
        elif "dict" in t:
            values[f.name] = None
        else:
            values[f.name] = f.name + salt
    return cls(**values)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_a_record_hashes_and_compares_by_its_fields(cls):
    a, b, other = _made(cls), _made(cls), _made(cls, "x")
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != other
    assert len({a, b, other}) == 2 and {a: 1}[b] == 1
    first = dataclasses.fields(cls)[0].name
    changed = dataclasses.replace(a, **{first: "changed"})
    assert getattr(changed, first) == "changed" and a == b     # the original is as it was


class _Changed(Exception):
    pass


@pytest.fixture
def records_refuse_changes(monkeypatch):
    """Each record class refuses to assign a field it already holds (what frozen=True did);
    returns the changes refused (an exception escaping a walk could be swallowed)."""
    refused: list[str] = []

    def guarded(cls):
        def setattr_once(self, name, value):
            if name in vars(self):
                refused.append(f"{cls.__name__}.{name}")
                raise _Changed(f"{cls.__name__}.{name} changed after it was made")
            object.__setattr__(self, name, value)
        return setattr_once

    for cls in RECORDS:
        monkeypatch.setattr(cls, "__setattr__", guarded(cls))
    return refused


def test_the_guard_refuses_a_change(records_refuse_changes):
    slot = _made(Slot)
    with pytest.raises(_Changed):
        slot.value = "other"
    assert records_refuse_changes == ["Slot.value"]


def test_reading_and_comparing_every_test_text_changes_no_record(records_refuse_changes):
    detector = Detector()
    texts = _texts(600, seed=41)
    views = [FactView(ref=f"s:t:{i}", subject="u1", key=("employer", "city", None)[i % 3], text=t,
                      category="general", learned_at=float(i)) for i, t in enumerate(texts)]
    found = 0
    for older, newer in zip(views, views[1:]):
        detector.read(older)
        detector.offers_and_wants(newer)
        found += len(detector.compare(newer, [older]))
    assert found > 20                       # the comparisons did find contradictions
    assert records_refuse_changes == []


def test_a_sync_with_detection_changes_no_record(tmp_path, records_refuse_changes):
    store = _user_store(tmp_path / "bot.db", 400)
    cfg = load_config(write_config(tmp_path, store))
    with OverlayStore(tmp_path / "o.db") as overlay:
        SyncEngine(overlay, cfg, detector=Detector()).sync(cfg.sources[0], as_of=AS_OF, full=True)
        edges = overlay.conn.execute("SELECT count(*) FROM contradictions").fetchone()[0]
    assert edges > 20
    assert records_refuse_changes == []
