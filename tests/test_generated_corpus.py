"""tools/generated_corpus.py: the generated block of the topic model's corpus (opt-in,
``train_detector --generated``): seeded, distinct, every slot alike, frames shared."""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import generated_corpus  # noqa: E402
import slot_corpus  # noqa: E402


def test_every_slot_gets_its_share_of_distinct_templates_the_same_for_a_seed():
    t = generated_corpus.templates()
    assert set(t) == set(slot_corpus.BASE_T)            # the topic model's classes, no more
    for slot, temps in t.items():
        want = generated_corpus.PER_SLOT * (generated_corpus.OTHER_FACTOR if slot == "other" else 1)
        assert len(temps) == len(set(temps)) == want, slot
    assert t == generated_corpus.templates() and t != generated_corpus.templates(seed=12)


def test_fillers_are_the_slot_corpus_ones_and_frames_carry_no_slot():
    fills = set(slot_corpus.BASE_FILL)
    t = generated_corpus.templates()
    for temps in t.values():
        for x in temps:
            assert set(re.findall(r"\{(\w+)\}", x)) <= fills, x
    # a frame opener such as "so I" or "btw I" wraps the "no slot" class as often as a slot
    for opener in ("so I ", "btw I ", "I just "):
        assert any(x.startswith(opener) for x in t["other"])
        assert sum(x.startswith(opener) for s, ts in t.items() if s != "other" for x in ts) > 10


def test_the_block_joins_the_corpus_only_when_asked():
    base = sum(len(v) for v in slot_corpus.T.values())
    try:
        slot_corpus.use_casual(True, generated=True)
        more = sum(len(v) for v in slot_corpus.T.values())
    finally:
        slot_corpus.use_casual(True)
    assert more > base + 1000 and sum(len(v) for v in slot_corpus.T.values()) == base
