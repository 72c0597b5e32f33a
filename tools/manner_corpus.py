"""Self-written chat messages labelled by manner, read once: how does a newer text speak of a
state of the user? It ended, switched to another value, began, resolved a pending thing; or
it restates one (same), plans (hedged), tells someone else's news, a short stay (temporary),
asks, recalls the past, adds to what is there, records a one-off event, or is small talk.

tools/manner_corpus.jsonl: one message a line, ``text``, ``manner``, ``topic`` and ``author``
(two independent authors, given only the class definitions, never a project or eval file:
casual chat lines, careful first-person notes with the point told implicitly half the time).
tools/cue_corpus.py's NEWER sentences and its minimal pairs' newer texts count too (authors
"cue_corpus" and "cue_shifts"). tools/train_detector.py --manner fits rules/manner_model.json
on them; the pair model weighs the newer text's manner. No pair of tools/pair_corpus.jsonl or
tests/contradiction_cases.py is among them: those train the pair model, which reads this
model's output (a model trained on the same texts would look surer on them than on any other).
"""
from __future__ import annotations

import functools
from pathlib import Path

from corpus_files import read_jsonl, unique_texts

PATH = Path(__file__).with_name("manner_corpus.jsonl")
# cue_corpus's names for the same manners
_RENAME = {"corrected": "switched", "mentioned": "same", "events": "event"}


@functools.lru_cache(maxsize=1)
def rows() -> tuple[dict, ...]:
    """Every labelled message: the file's and the cue corpus's newer texts."""
    import cue_corpus
    out = read_jsonl(PATH)
    for kind, texts in cue_corpus.NEWER.items():
        out += [{"text": t, "manner": _RENAME.get(kind, kind), "topic": "", "author": "cue_corpus"} for t in texts]
    for kind, pairs in cue_corpus.SHIFTS.items():
        out += [{"text": new, "manner": _RENAME.get(kind, kind), "topic": "", "author": "cue_shifts"}
                for _, new in pairs]
    return unique_texts(out)
