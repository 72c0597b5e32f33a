"""Self-written sentences labelled by topic (what a memory or a chat message says about the
user), read once: tools/topic_corpus.jsonl.

Each line: ``text``, ``topic`` (one of the topic model's slots, or "other": small talk,
questions, plans, someone else's news), ``style`` ("memory": as an assistant stores a fact,
sometimes with the ``key`` an app keeps beside it; "message": what a user types, often naming
the topic only by a side effect) and ``author``. Four independent authors wrote them from the
slot list and a one-page brief only, never from a project or eval file: a casual texter,
careful notes, a user writing half in other languages, a storyteller who never names the
topic. tools/train_detector.py --natural-topics gives them to the topic model beside the
templates of tools/slot_corpus.py (docs/contradictions.md has what was measured).
"""
from __future__ import annotations

import functools
from pathlib import Path

from corpus_files import read_jsonl, unique_texts
from memwatch_overlay.overlay.detect.learned import Learned

PATH = Path(__file__).with_name("topic_corpus.jsonl")


@functools.lru_cache(maxsize=1)
def rows() -> tuple[dict, ...]:
    return unique_texts(read_jsonl(PATH))


def sentences_by_topic() -> dict[str, list[str]]:
    """topic -> its texts as the topic model reads them (a memory's key before its text, as
    for an older fact; braces, the templates' fill marks, replaced)."""
    out: dict[str, list[str]] = {}
    for r in rows():
        text = Learned.old_text(r["text"], r.get("key"))
        out.setdefault(r["topic"], []).append(text.replace("{", "(").replace("}", ")"))
    return out


def texts() -> frozenset[str]:
    """Every text of sentences_by_topic()."""
    return frozenset(t for ts in sentences_by_topic().values() for t in ts)
