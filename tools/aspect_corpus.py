"""Self-written memories labelled by aspect, read once: does a memory hold a lasting *state*
("Works at the Deloitte office in Manchester", "Moved to Porto in 2022") or record a one-off
*episode* ("Had a client meeting at the Deloitte office in Manchester") that stays true
whatever changes later?

tools/aspect_corpus.jsonl: one memory a line, ``text``, ``aspect`` ("state" or "episode"),
``topic`` and ``author`` (three independent authors, given only this definition, never a
project or eval file: extracted third-person facts, first-person chat lines, minimal
contrasts). tools/cue_corpus.py's OLDER examples count too ("event" an episode; "lasting"
and "pending" states), as a fourth author. tools/train_detector.py --aspect fits
rules/aspect_model.json on them; the pair model weighs the older text's episode probability.
"""
from __future__ import annotations

import functools
from pathlib import Path

from corpus_files import read_jsonl, unique_texts

PATH = Path(__file__).with_name("aspect_corpus.jsonl")


@functools.lru_cache(maxsize=1)
def rows() -> tuple[dict, ...]:
    """Every labelled memory: the file's and cue_corpus.OLDER's (author "cue_corpus")."""
    import cue_corpus
    out = read_jsonl(PATH)
    for kind, texts in cue_corpus.OLDER.items():
        aspect = "episode" if kind == "event" else "state"
        out += [{"text": t, "aspect": aspect, "topic": kind, "author": "cue_corpus"} for t in texts]
    return unique_texts(out)
