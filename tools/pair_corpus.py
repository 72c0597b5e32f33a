"""The labelled (older memory, newer text) pairs of tools/pair_corpus.jsonl, read once.

Each line: ``slot`` (the memory's topic), ``old``, ``new``, ``label`` (1: the newer text means
the memory is no longer true as stored), ``kind`` (how: switched, ended, began ...; or why
not: same, someone_else, hedged, event_then_state_change ...) and, for the pairs added at stop 32,
``author`` (stop 36 added 420 pairs each of ``pairs_thirdperson``: a person's fact in the third
person against a later chat turn, and ``pairs_assistant``: an assistant's key/value entries and
notes against messages typed to it). Written for this project by
independent authors from slot names and kinds only, never from an eval case (format, origin and
what was measured with them: docs/contradictions.md). tools/train_detector.py --pair-corpus
trains the pair model on them; --pair-topics also gives their texts to the topic model.
"""
from __future__ import annotations

import functools
from pathlib import Path

from corpus_files import read_jsonl

PATH = Path(__file__).with_name("pair_corpus.jsonl")
# the corpus's slots that are no topic of the topic model (their texts are left out of it)
NOT_TOPICS = frozenset({"preferences", "ownership"})
# the kinds of a pair whose newer text outdates the memory (label 1); every other kind is label 0
OUTDATING_KINDS = frozenset({"switched", "ended", "began", "resolved", "count", "changed_mind", "abandoned",
                             "rescheduled", "cancelled", "corrected"})
HOLDING_KINDS = frozenset({"same", "addition", "someone_else", "hedged", "temporary", "past", "question", "event",
                           "unrelated", "partial", "progress", "event_then_state_change"})


@functools.lru_cache(maxsize=1)
def rows() -> tuple[dict, ...]:
    return tuple(read_jsonl(PATH))


def pairs(exclude: frozenset[str] = frozenset()) -> list[tuple[str, None, str, int]]:
    """(old, key, new, label) of every pair, but those with a text in ``exclude``."""
    return [(r["old"], None, r["new"], int(r["label"])) for r in rows()
            if r["old"] not in exclude and r["new"] not in exclude]


def sentences() -> list[str]:
    """Both texts of every pair."""
    return [t for r in rows() for t in (r["old"], r["new"])]


def sentences_by_topic() -> dict[str, list[str]]:
    """topic -> the texts about it: both texts of a pair are about its slot, but a newer text
    of kind "unrelated" (the slot's words, another meaning) is "other"."""
    out: dict[str, list[str]] = {}
    for r in rows():
        topic = r["slot"]
        if topic in NOT_TOPICS:
            continue
        out.setdefault(topic, []).append(r["old"])
        out.setdefault("other" if r["kind"] == "unrelated" else topic, []).append(r["new"])
    return out
