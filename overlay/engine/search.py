"""`search QUERY`: facts ranked by relevance x freshness x confidence.

Relevance is lexical (Okapi BM25 over the fact's text and key, lower-cased words with a
light suffix strip, stop words dropped), divided by the best match's so the top hit has
relevance 1.0. A stale or low-confidence fact that matches well therefore ranks below
a fresh one that matches as well: search results are meant to be repeated to a user.

Work follows the matches, not the overlay's size, as far as SQLite allows: one SQL pass
(substring test done in C) picks the candidate facts, only those are rescored and
tokenised in Python.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass

from memwatch_overlay.overlay.engine.audit import fact_dict
from memwatch_overlay.overlay.store.database import ANY, OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.sqlhelpers import id_chunks

K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset("a an and are as at be but by for from has have he her his i in is it its me my of on or our "
                  "she so that the their them they this to was we were what when where who with you your".split())


def terms(text: str) -> list[str]:
    """Lower-cased words minus stop words, with plural/-ing/-ed endings stripped."""
    out = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[:-len(suffix)]
                break
        out.append(word)
    return out


@dataclass(frozen=True)
class SearchHit:
    fact: dict              # the audit JSON's fact shape
    relevance: float
    score: float            # relevance x freshness x confidence

    def to_dict(self) -> dict:
        return {"score": self.score, "relevance": self.relevance, **self.fact}


def search_facts(store: OverlayStore, engine: SyncEngine, query: str, *, limit: int = 10,
                 subject=ANY, source: str | None = None, as_of: float | None = None) -> list[SearchHit]:
    """Live facts matching `query`, best first; `subject` None means facts without a subject."""
    as_of = time.time() if as_of is None else as_of
    wanted = list(dict.fromkeys(terms(query)))
    if not wanted or limit <= 0:
        return []
    n_docs, avg_len = store.search_corpus_stats(subject, source)
    if not n_docs:
        return []
    candidates = []
    for fid, text, key in store.search_candidates(wanted, subject, source):
        words = terms(f"{text} {key or ''}")
        tf = {t: words.count(t) for t in wanted if t in words}
        if tf:
            candidates.append((fid, tf, len(text) + len(key or "")))
    if not candidates:
        return []
    df = {t: sum(1 for _, tf, _ in candidates if t in tf) for t in wanted}
    idf = {t: math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
    bm25 = {}
    for fid, tf, length in candidates:
        norm = K1 * (1 - B + B * length / (avg_len or 1))
        bm25[fid] = sum(idf[t] * f * (K1 + 1) / (f + norm) for t, f in tf.items())
    ids = list(bm25)
    for chunk in id_chunks(ids):
        engine.rescore(as_of, fact_ids=chunk)
    best = max(bm25.values()) or 1.0
    hits = []
    for row in store.fact_rows_by_id(ids):
        relevance = bm25[row["id"]] / best
        confidence = row["confidence"] if row["confidence"] is not None else 1.0
        hits.append((relevance * (row["freshness"] or 0.0) * confidence, relevance, row))
    hits.sort(key=lambda h: (-h[0], h[2]["ref"]))
    out = []
    for score, relevance, row in hits[:limit]:
        fact = fact_dict(row)
        out.append(SearchHit(fact, round(relevance, 4), round(score, 4)))
    return out


def run_search(config, overlay_path: str | None, query: str, **kwargs) -> list[SearchHit]:
    """`memwatch-overlay search`: open the overlay, search it, close it."""
    from memwatch_overlay.rules.config import Config
    from memwatch_overlay.overlay.engine.audit import open_overlay
    with open_overlay(config, overlay_path) as store:
        return search_facts(store, SyncEngine(store, config or Config()), query, **kwargs)
